/**
 * Lone UTF-16 surrogates at the built command's real entrances, with the
 * brain on loopback: serve's HTTP API (400 naming the problem), Discord (a
 * reply naming it), and an existing history, a model's answer and a
 * compaction's summary holding one in a run. Every request body the brain
 * got is checked string by string. Needs `npm run build`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import * as FakeDiscord from "../support/FakeDiscord.js"
import { line } from "../support/Harness.js"
import { HIGH, loneSurrogatesInBody } from "../support/LoneSurrogates.js"
import { eventually, sandbox } from "../support/Sandbox.js"

const REPLACEMENT = "\uFFFD"

const setup = (handler: AnthropicServer.Handler, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(handler)
    const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: server.url, ...extra }, "planckclaw-lone-")
    /** Every request body the brain got, with the lone surrogates found in it. */
    const loneSent = Effect.map(server.requests, (requests) => requests.flatMap((request) => loneSurrogatesInBody(request.rawBody)))
    return { server, box, loneSent }
  })

describe("lone surrogates (built command)", () => {
  it.live("serve: a text or channel holding one is a 400 naming it; the brain is not asked", () =>
    Effect.gen(function*() {
      const { box, loneSent, server } = yield* setup(AnthropicServer.echo)
      const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0"], {
        cwd: box.dir,
        env: box.envWith({ PLANCKCLAW_AGENTS_DIR: box.path("agents") })
      })
      const port = yield* eventually("serve to say where it listens", () =>
        /HTTP API on 127\.0\.0\.1:(\d+)/.exec(Effect.runSync(running.stderrSoFar))?.[1])
      // Written by hand: JSON's own escape, as a client sends it.
      const post = (body: string) =>
        Effect.promise(async () => {
          const response = await fetch(`http://127.0.0.1:${port}/v1/agents/alice/messages`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body
          })
          return { status: response.status, body: await response.json() as Record<string, unknown> }
        })
      expect(yield* post(String.raw`{"text":"half \ud83d of a smile"}`)).toEqual({
        status: 400,
        body: {
          error: "bad-body",
          message: "\"text\" holds a lone UTF-16 surrogate (\\ud83d at character 6): half of a character such as an emoji, " +
            "which the model's API refuses: send the character whole (both halves) or not at all"
        }
      })
      const channel = yield* post(String.raw`{"text":"hi","channel":"c\ude00"}`)
      expect(channel.status).toBe(400)
      expect(channel.body.message).toContain("\"channel\" holds a lone UTF-16 surrogate (\\ude00 at character 2)")
      // A whole pair is no lone surrogate: answered.
      expect(yield* post(String.raw`{"text":"a smile \ud83d\ude00"}`)).toEqual({ status: 200, body: { reply: "re: a smile 😀", stored: true } })
      expect((yield* server.requests).length).toBe(1)
      expect(yield* loneSent).toEqual([])
      expect(fs.existsSync(path.join(box.path("agents"), "alice", "history.jsonl"))).toBe(true)
    }))

  it.live("run: an existing history line, a model's answer and a compaction's summary holding one never reach the brain", () =>
    Effect.gen(function*() {
      const { box, loneSent, server } = yield* setup(
        (request) => AnthropicServer.text(AnthropicServer.isCompaction(request) ? `summary ${HIGH}` : `ok ${HIGH}`),
        { HISTORY_MAX: "5", HISTORY_KEEP: "2", PLANCKCLAW_PROMPT_CACHE: "0" }
      )
      // As an older build wrote it: JSON.stringify spells the lone half `\ud83d`.
      box.writeMemory("history.jsonl", line("user", `half ${HIGH}`) + line("assistant", "noted"))
      const running = yield* Cli.start(["run"], { cwd: box.dir, env: box.env })
      yield* running.write("one\n")
      yield* running.lines(1)
      // Six lines: a compaction folds the four oldest, in the background.
      yield* running.write("two\n")
      yield* running.lines(2)
      yield* eventually("the compaction to write summary.md", () => box.memoryFile("summary.md"))
      yield* running.write("three\n")
      expect(yield* running.lines(3)).toEqual([`ok ${REPLACEMENT}`, `ok ${REPLACEMENT}`, `ok ${REPLACEMENT}`])
      yield* running.closeInput
      const result = yield* running.done
      expect(result.code).toBe(0)

      const requests = yield* server.requests
      expect(requests.filter(AnthropicServer.isCompaction)).toHaveLength(1)
      expect(yield* loneSent).toEqual([])
      const turns = yield* server.turns
      expect(turns[0]!.body.messages[0]).toEqual({ role: "user", content: `half ${REPLACEMENT}` })
      // The answer was stored with U+FFFD, and went so into the next request.
      expect(turns[1]!.body.messages).toContainEqual({ role: "assistant", content: `ok ${REPLACEMENT}` })
      expect(turns[2]!.body.system).toContain(`CONVERSATION SUMMARY:\nsummary ${REPLACEMENT}`)
      expect(box.memoryFile("history.jsonl")).toBe(
        line("user", "two") + line("assistant", `ok ${REPLACEMENT}`) + line("user", "three") + line("assistant", `ok ${REPLACEMENT}`)
      )
      expect(result.stderr.split("a line holds a lone UTF-16 surrogate").length - 1).toBe(1)
    }))

  it.live("run --bridge discord: a message holding one is answered with a reply naming it; the brain is not asked", () =>
    Effect.gen(function*() {
      const channel = "200000000000000001"
      const fake = yield* FakeDiscord.make({
        token: "test-bot-token",
        botUserId: "100000000000000001",
        guildId: "400000000000000001",
        channelIds: [channel]
      })
      // A worktree whose node_modules is a link: see test/interact/discord/DiscordCommand.test.ts.
      const linked = fs.lstatSync(path.join(Cli.REPO, "node_modules")).isSymbolicLink() ? { NODE_OPTIONS: "--preserve-symlinks" } : {}
      const { box, loneSent, server } = yield* setup(AnthropicServer.echo, {
        DISCORD_BOT_TOKEN: "test-bot-token",
        DISCORD_CHANNEL_ID: channel,
        DISCORD_API_URL: fake.apiUrl,
        ...linked
      })
      yield* Cli.start(["run", "--bridge", "discord"], { cwd: box.dir, env: box.env })
      const replies = () =>
        fake.rest()
          .filter((record) => record.method === "POST" && record.path === `/api/v10/channels/${channel}/messages`)
          .map((record) => (record.body as { content: string }).content)
      yield* fake.waitFor(() => fake.gateway().some((record) => "op" in record && record.op === 2) ? true : undefined)
      yield* fake.waitFor(() => fake.rest().find((record) => record.method === "PUT"))
      yield* fake.messageCreate({ channelId: channel, authorId: "300000000000000001", content: `half ${HIGH}` })
      yield* fake.waitFor(() => replies().length >= 1 ? true : undefined)
      yield* fake.messageCreate({ channelId: channel, authorId: "300000000000000001", content: "hi" })
      yield* fake.waitFor(() => replies().length >= 2 ? true : undefined)
      const [refused, answered] = replies()
      expect(refused).toContain("holds a lone UTF-16 surrogate (\\ud83d at character 6)")
      expect(answered).toBe("re: hi")
      expect((yield* server.requests).length).toBe(1)
      expect(yield* loneSent).toEqual([])
    }))
})
