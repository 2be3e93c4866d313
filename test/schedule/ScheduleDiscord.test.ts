/**
 * A schedule entry whose destination is a Discord channel: the built `run
 * --bridge discord`, against the local Discord server, posts the scheduled
 * turn's reply in that channel through its own Discord bridge; `serve` and
 * the cluster post it over REST (ScheduleDiscord), as the bridge posts its
 * replies: no pings, and a nonce per part.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScheduleDiscord from "../../src/hosts/serve/ScheduleDiscord.js"
import { settings } from "../hosts/serve/Kit.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import * as FakeDiscord from "../support/FakeDiscord.js"
import { sandbox } from "../support/Sandbox.js"

const { botUserId, token } = FakeDiscord.ids
const guildId = "400000000000000001"
const channel = "200000000000000001"

const linkedModules = fs.lstatSync(path.join(Cli.REPO, "node_modules")).isSymbolicLink()
  ? { NODE_OPTIONS: "--preserve-symlinks" }
  : {}

describe("a schedule entry to discord:CHANNEL", () => {
  it.live("run --bridge discord posts the scheduled turn's reply in the channel", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
      const brain = yield* AnthropicServer.make(AnthropicServer.echo)
      const box = yield* sandbox({
        ANTHROPIC_API_KEY: "test-key-not-secret",
        ANTHROPIC_BASE_URL: brain.url,
        DISCORD_BOT_TOKEN: token,
        DISCORD_CHANNEL_ID: channel,
        DISCORD_API_URL: fake.apiUrl,
        ...linkedModules
      }, "planckclaw-discord-")
      const memory = box.env.PLANCKCLAW_DIR!
      fs.mkdirSync(memory, { recursive: true })
      // Made an hour and five seconds ago, hourly: its run five seconds ago, missed while nothing ran, fires at start.
      const created = new Date(Date.now() - 3_600_000 - 5_000).toISOString()
      fs.writeFileSync(path.join(memory, "schedules.json"), JSON.stringify({
        entries: [{ id: "d1", when: { _tag: "Every", seconds: 3600 }, text: "morning digest", to: `discord:${channel}`, created }]
      }))
      const running = yield* Cli.start(["run", "--bridge", "discord"], { cwd: box.dir, env: box.env })
      const posted = yield* fake.waitFor(() =>
        fake.rest().find((record) => record.method === "POST" && record.path === `/api/v10/channels/${channel}/messages`))
      expect((posted.body as { content: string }).content).toBe("re: [scheduled d1] morning digest")
      running.process.kill("SIGTERM")
      expect((yield* running.done).code).toBe(0)
      const history = fs.readFileSync(path.join(memory, "history.jsonl"), "utf8")
      expect(history).toContain("[scheduled d1] morning digest")
    }))
})

describe("a schedule reply posted to Discord by serve and the cluster", () => {
  const posts = (fake: FakeDiscord.FakeDiscord) =>
    fake.rest().filter((record) => record.method === "POST" && record.path === `/api/v10/channels/${channel}/messages`)
  const postToChannel = (fake: FakeDiscord.FakeDiscord) =>
    ScheduleDiscord.make.pipe(
      Effect.provide(settings({ DISCORD_BOT_TOKEN: token, DISCORD_API_URL: fake.apiUrl })),
      Effect.map((post) => {
        expect(post).toBeDefined()
        return post!
      })
    )

  it.live("pings no one, whatever the reply says, and gives each part a nonce Discord enforces", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
      const post = yield* postToChannel(fake)
      // Parts of 2000 characters at most: more than one.
      yield* post(channel, `@everyone the nightly build is broken\n\n${"x".repeat(2500)}`)
      const bodies = posts(fake).map((record) =>
        record.body as { content: string; allowed_mentions?: unknown; nonce?: string; enforce_nonce?: boolean }
      )
      expect(bodies.length).toBeGreaterThan(1)
      expect(bodies[0]!.content).toBe("@everyone the nightly build is broken")
      for (const body of bodies) {
        expect(body.allowed_mentions).toEqual({ parse: [] })
        expect(body.enforce_nonce).toBe(true)
        expect(body.nonce?.length).toBeGreaterThan(0)
        expect(body.nonce!.length).toBeLessThanOrEqual(25)
      }
      expect(new Set(bodies.map((body) => body.nonce)).size).toBe(bodies.length)
    }))

  it.live("a part Discord stored but answered 502 is sent again with its nonce and posted once", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
      const post = yield* postToChannel(fake)
      yield* fake.loseAnswers(channel, 1)
      yield* post(channel, "the nightly build is broken")
      const sent = posts(fake)
      expect(sent.map((record) => record.status)).toEqual([502, 200])
      expect((sent[0]!.body as { nonce: string }).nonce).toBe((sent[1]!.body as { nonce: string }).nonce)
      expect(fake.created().filter((message) => message.channelId === channel).map((message) => message.content))
        .toEqual(["the nightly build is broken"])
    }))
})
