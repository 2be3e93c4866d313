/**
 * A schedule entry whose destination is a Discord channel (issue 51): the
 * built `run --bridge discord`, against the local Discord server, posts the
 * scheduled turn's reply in that channel through its own Discord bridge.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import * as FakeDiscord from "../support/FakeDiscord.js"
import { sandbox } from "../support/Sandbox.js"

const botUserId = "100000000000000001"
const guildId = "400000000000000001"
const channel = "200000000000000001"
const token = "test-bot-token"

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
