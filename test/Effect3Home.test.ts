/**
 * Continuity: homes written by the last Effect 3 build (commit 65e92f4, see
 * test/fixtures/effect3-home/generate.mjs) are read and continued by this
 * build's command, unchanged: a `run` memory directory (history after a
 * compaction, summary, usage ledger, a message journaled and never
 * answered), a `serve` agents directory (two agents, their Idempotency-Key
 * records) and a `serve --bridge discord` one (a reply waiting in the
 * outbox). Each test works on a copy; the fixture is never written.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { outboxFileName, replay as replayOutbox } from "../src/interact/discord/Outbox.js"
import { replay } from "../src/memory/Inbox.js"
import * as AnthropicServer from "./support/AnthropicServer.js"
import * as Cli from "./support/Cli.js"
import * as FakeDiscord from "./support/FakeDiscord.js"
import { eventually, sandbox, within } from "./support/Sandbox.js"
import { setup, startServe } from "./support/ServeKit.js"

const FIXTURE = path.join(import.meta.dirname, "fixtures", "effect3-home")
const UNANSWERED = "this message stays unanswered"

/** Copies a part of the fixture to `to`, with a home's modes (0700 directories, 0600 files). */
const copyFixture = (part: string, to: string) => {
  fs.cpSync(path.join(FIXTURE, part), to, { recursive: true })
  const tighten = (dir: string) => {
    fs.chmodSync(dir, 0o700)
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name)
      if (entry.isDirectory()) tighten(file)
      else fs.chmodSync(file, 0o600)
    }
  }
  tighten(to)
}

const read = (file: string) => fs.readFileSync(file, "utf8")
const bodyText = (request: AnthropicServer.RecordedRequest) => JSON.stringify(request.body)

/** POST a message with a channel and an Idempotency-Key: status and parsed body. */
const post = (base: string, agent: string, key: string, text: string) =>
  Effect.promise(() =>
    fetch(`${base}/v1/agents/${agent}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ text, channel: "fixture" })
    }).then(async (response) => ({ status: response.status, body: (await response.json()) as unknown }))
  )

describe("a home written by the Effect 3 build", () => {
  it.live("run answers the message it left journaled, then a new one with the old history and summary; history goes on; usage counts old and new", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: server.url, PLANCKCLAW_PROMPT_CACHE: "0" })
      copyFixture("run/memory", box.memory)
      const history = path.join(box.memory, "history.jsonl")
      const oldHistory = read(path.join(FIXTURE, "run/memory/history.jsonl"))
      const oldSummary = read(path.join(FIXTURE, "run/memory/summary.md"))
      expect(replay(read(path.join(FIXTURE, "run/memory/.inbox.jsonl"))).map((pending) => pending.text)).toEqual([UNANSWERED])

      const result = yield* Cli.run(["run"], { cwd: box.dir, env: box.env, input: "what did I say about the bees?\n" })
      expect(result.stderr).toContain("answering 1 message(s) left unanswered by the previous run")
      expect(result.code).toBe(0)
      expect(result.stdout).toBe(`re: ${UNANSWERED}\nre: what did I say about the bees?\n`)

      const turns = yield* server.turns
      expect(turns.map((turn) => AnthropicServer.lastUserText(turn.body))).toEqual([UNANSWERED, "what did I say about the bees?"])
      // The old build's last exchange and its summary (the five earlier messages, folded) are in the new turn's request.
      const asked = bodyText(turns[1]!)
      expect(asked).toContain("re: what was the word?")
      expect(oldSummary).toContain("remember the word quince")
      expect(asked).toContain(JSON.stringify(oldSummary.trim()).slice(1, -1))

      // History goes on: the old lines as they were, then the two exchanges.
      const now = read(history)
      expect(now.startsWith(oldHistory)).toBe(true)
      expect(now.slice(oldHistory.length).split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))).toEqual([
        { role: "user", content: UNANSWERED },
        { role: "assistant", content: `re: ${UNANSWERED}` },
        { role: "user", content: "what did I say about the bees?" },
        { role: "assistant", content: "re: what did I say about the bees?" }
      ])
      expect(replay(read(path.join(box.memory, ".inbox.jsonl")))).toEqual([])

      // The ledger: the old build's seven answers (six turns, one compaction) and this build's two turns.
      const usage = yield* Cli.run(["usage"], { cwd: box.dir, env: box.env })
      expect(usage.code).toBe(0)
      expect(usage.stdout).toMatch(/^\d{4}-\d\d-\d\d\s+claude-effect3-fixture\s+7\s+7028\s+728\s/m)
      expect(usage.stdout).toMatch(/^\d{4}-\d\d-\d\d\s+claude-test\s+2\s+2\s+2\s/m)
      expect(usage.stdout).toContain("Total: 9 requests")
    }))

  it.live("serve answers an old agent with its history and returns an old Idempotency-Key's reply without a turn", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.echo)
      copyFixture("serve/agents", t.agents)
      const oldAlice = read(path.join(FIXTURE, "serve/agents/alice/history.jsonl"))
      const serve = yield* startServe(t.box.dir, t.env)

      const fresh = yield* post(serve.base, "alice", "alice-key-3", "what do I drink?")
      expect(fresh).toEqual({ status: 200, body: { reply: "re: what do I drink?", stored: true } })
      const [turn] = yield* t.server.turns
      expect(bodyText(turn!)).toContain("alice likes green tea")
      expect(bodyText(turn!)).toContain("alice lives in Lisbon")
      expect(t.history("alice").startsWith(oldAlice)).toBe(true)
      expect(t.history("alice").slice(oldAlice.length)).toBe(
        "{\"role\":\"user\",\"content\":\"what do I drink?\"}\n{\"role\":\"assistant\",\"content\":\"re: what do I drink?\"}\n"
      )

      // Keys the old build recorded: the stored reply, no second turn, history untouched.
      const retried = yield* post(serve.base, "alice", "alice-key-1", "alice likes green tea")
      expect(retried).toEqual({ status: 200, body: { reply: "re: alice likes green tea", stored: true } })
      const bob = yield* post(serve.base, "bob", "bob-key-1", "bob plays the cello")
      expect(bob).toEqual({ status: 200, body: { reply: "re: bob plays the cello", stored: true } })
      // A different text under an old key is still a reuse, refused.
      const reused = yield* post(serve.base, "bob", "bob-key-1", "bob plays the drums")
      expect(reused.status).toBe(422)
      expect((yield* t.server.turns).length).toBe(1)
      expect(t.history("bob")).toBe(read(path.join(FIXTURE, "serve/agents/bob/history.jsonl")))

      serve.running.process.kill("SIGTERM")
      expect((yield* within("serve to exit after SIGTERM")(serve.running.done)).code).toBe(0)
    }))

  it.live("serve --bridge discord posts the reply the old build left in its outbox, once, under its nonce, without a turn", () =>
    Effect.gen(function*() {
      const channel = "300000000000000001"
      const token = `test-token-${process.pid}`
      const fake = yield* FakeDiscord.make({ token, botUserId: "100000000000000001", guildId: "200000000000000001", channelIds: [channel] })
      const t = yield* setup(AnthropicServer.echo)
      copyFixture("serve-discord/agents", t.agents)
      const outboxLines = read(path.join(FIXTURE, "serve-discord/agents", outboxFileName)).split("\n").filter((line) => line !== "")
      const part = (JSON.parse(outboxLines[0]!) as { parts: Array<{ content: string; nonce: string }> }).parts[0]!
      yield* Cli.start(["serve", "--http", "127.0.0.1:0", "--bridge", "discord"], {
        cwd: t.box.dir,
        env: { ...t.env, DISCORD_BOT_TOKEN: token, DISCORD_CHANNEL_ID: channel, DISCORD_API_URL: fake.apiUrl }
      })
      const posted = yield* eventually("the outbox's reply to be posted", () => fake.created().find((message) => message.nonce === part.nonce))
      expect(posted).toMatchObject({ channelId: channel, content: "re: user-400000000000000001: carol collects stamps", nonce: part.nonce })
      expect(part.content).toBe(posted.content)
      // Delivered once, and the outbox says so; the agent was not asked again.
      const outbox = path.join(t.agents, outboxFileName)
      expect(replayOutbox(read(path.join(FIXTURE, "serve-discord/agents", outboxFileName))).length).toBe(1)
      yield* eventually("the outbox to say it was sent", () => replayOutbox(read(outbox)).length === 0 || undefined)
      expect(fake.created().filter((message) => message.content === part.content).length).toBe(1)
      expect((yield* t.server.turns).length).toBe(0)
    }))
})
