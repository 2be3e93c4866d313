/**
 * End to end: the built command with `--bridge discord` against the local
 * Discord server of the test suite: a fatal close after start-up, catch-up
 * across a restart, and Discord routed to agents in `serve`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { line } from "../../support/Harness.js"
import { eventually, sandbox } from "../../support/Sandbox.js"

const { botUserId, token } = FakeDiscord.ids
const guildId = "400000000000000001"
const channel = "200000000000000001"
const alice = "300000000000000001"

/**
 * In a git worktree whose node_modules is a link to another checkout's, Node
 * can load discord.js twice (by the link and by its real path) and its lazy
 * requires then break; keeping links as they are avoids that. A plain
 * checkout needs nothing.
 */
const linkedModules = fs.lstatSync(path.join(Cli.REPO, "node_modules")).isSymbolicLink()
  ? { NODE_OPTIONS: "--preserve-symlinks" }
  : {}

const setup = (fake: FakeDiscord.FakeDiscord, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(AnthropicServer.echo)
    const box = yield* sandbox({
      ANTHROPIC_API_KEY: "test-key-not-secret",
      ANTHROPIC_BASE_URL: server.url,
      DISCORD_BOT_TOKEN: token,
      DISCORD_CHANNEL_ID: channel,
      DISCORD_API_URL: fake.apiUrl,
      ...linkedModules,
      ...extra
    }, "planckclaw-discord-")
    return { server, box }
  })

const replies = (fake: FakeDiscord.FakeDiscord) =>
  fake.rest()
    .filter((record) => record.method === "POST" && record.path === `/api/v10/channels/${channel}/messages`)
    .map((record) => (record.body as { content: string }).content)

const repliesReach = (fake: FakeDiscord.FakeDiscord, count: number) =>
  fake.waitFor(() => (replies(fake).length >= count ? true : undefined))

const identified = (fake: FakeDiscord.FakeDiscord, count: number) =>
  fake.waitFor(() => fake.gateway().filter((record) => "op" in record && record.op === 2 && record.event === "received").length >= count ? true : undefined)

describe("planckclaw with --bridge discord (built command)", () => {
  it.live("ends with one line and exit 2 when Discord closes the gateway with 4004 after start-up", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
      const t = yield* setup(fake)
      const running = yield* Cli.start(["run", "--bridge", "discord"], { cwd: t.box.dir, env: t.box.env })
      yield* identified(fake, 1)
      yield* fake.waitFor(() => fake.rest().find((record) => record.method === "PUT"))
      yield* fake.closeGateway(4004)
      const result = yield* running.done
      expect(result.code).toBe(2)
      expect(result.stderr).toContain("planckclaw: Discord rejected DISCORD_BOT_TOKEN")
      expect(result.stderr).not.toContain("unexpected failure")
      expect(result.stderr).not.toMatch(/\n\s+at /)
    }))

  it.live("answers, after a restart, each message sent while it was stopped, once", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
      const t = yield* setup(fake)
      const first = yield* Cli.start(["run", "--bridge", "discord"], { cwd: t.box.dir, env: t.box.env })
      yield* identified(fake, 1)
      yield* fake.messageCreate({ channelId: channel, authorId: alice, content: "before" })
      yield* repliesReach(fake, 1)
      first.process.kill("SIGTERM")
      expect((yield* first.done).code).toBe(0)
      yield* fake.messageCreate({ channelId: channel, authorId: alice, content: "while stopped 1" })
      yield* fake.messageCreate({ channelId: channel, authorId: alice, content: "while stopped 2" })
      const second = yield* Cli.start(["run", "--bridge", "discord"], { cwd: t.box.dir, env: t.box.env })
      yield* repliesReach(fake, 3)
      yield* fake.messageCreate({ channelId: channel, authorId: alice, content: "after" })
      yield* repliesReach(fake, 4)
      second.process.kill("SIGTERM")
      expect((yield* second.done).code).toBe(0)
      expect(replies(fake)).toEqual(["re: before", "re: while stopped 1", "re: while stopped 2", "re: after"])
      expect(t.box.memoryFile("history.jsonl")).toBe(
        ["before", "while stopped 1", "while stopped 2", "after"].map((text) =>
          line("user", text) + line("assistant", `re: ${text}`)
        ).join("")
      )
      expect(fs.existsSync(path.join(t.box.memory, "discord-catch-up.json"))).toBe(true)
    }))

  it.live("serve --bridge discord answers Discord by agent per channel, with the speaker's name, beside the HTTP API", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
      const t = yield* setup(fake)
      const agents = t.box.path("agents")
      const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0", "--bridge", "discord"], {
        cwd: t.box.dir,
        env: t.box.envWith({ PLANCKCLAW_AGENTS_DIR: agents })
      })
      const stderr = () => Effect.runSync(running.stderrSoFar)
      const port = yield* eventually("serve to say where it listens", () => /HTTP API on 127\.0\.0\.1:(\d+)/.exec(stderr())?.[1])
      yield* identified(fake, 1)
      yield* fake.messageCreate({ channelId: channel, authorId: alice, nick: "Alice", content: "hi there" })
      yield* repliesReach(fake, 1)
      expect(replies(fake)).toEqual(["re: Alice: hi there"])
      const history = fs.readFileSync(path.join(agents, `discord-c${channel}`, "history.jsonl"), "utf8")
      expect(history).toBe(line("user", "Alice: hi there") + line("assistant", "re: Alice: hi there"))
      const listed = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/v1/agents`).then((r) => r.json()))
      expect((listed as { agents: Array<{ id: string }> }).agents.map((agent) => agent.id)).toEqual([`discord-c${channel}`])
      running.process.kill("SIGTERM")
      expect((yield* running.done).code).toBe(0)
    }))

  it.live("serve --bridge discord stopped while a message is answered posts its reply after the restart, once", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
      // The first turn's request is never answered: the stop comes while it waits.
      const server = yield* AnthropicServer.make((request, index) => index === 0 ? AnthropicServer.hang : AnthropicServer.echo(request, index))
      const t = yield* setup(fake, { ANTHROPIC_BASE_URL: server.url })
      const agents = t.box.path("agents")
      const serve = () =>
        Cli.start(["serve", "--http", "127.0.0.1:0", "--bridge", "discord"], {
          cwd: t.box.dir,
          env: t.box.envWith({ PLANCKCLAW_AGENTS_DIR: agents })
        })
      const first = yield* serve()
      yield* identified(fake, 1)
      yield* fake.messageCreate({ channelId: channel, authorId: alice, nick: "Alice", content: "asked before the stop" })
      yield* server.awaitRequests(1)
      first.process.kill("SIGTERM")
      expect((yield* first.done).code).toBe(0)
      expect(replies(fake)).toEqual([])

      const second = yield* serve()
      yield* repliesReach(fake, 1)
      expect(replies(fake)).toEqual(["re: Alice: asked before the stop"])
      const history = fs.readFileSync(path.join(agents, `discord-c${channel}`, "history.jsonl"), "utf8")
      expect(history).toBe(line("user", "Alice: asked before the stop") + line("assistant", "re: Alice: asked before the stop"))
      // Answered once: the recovered turn and the message handed over again under its key are one.
      expect((yield* server.turns).length).toBe(2)
      second.process.kill("SIGTERM")
      expect((yield* second.done).code).toBe(0)
      expect(replies(fake)).toEqual(["re: Alice: asked before the stop"])
    }))
})
