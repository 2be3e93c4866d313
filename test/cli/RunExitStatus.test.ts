/**
 * A piped `planckclaw run` (the built command) tells a script whether every
 * message got a real answer: exit 0 when all did, 3 when any reply was the
 * apology or a misconfigured brain's. A brain server that refuses the
 * connection is named in one line with its URL, at the first attempt, even
 * with retries set (the schedule, 1 s then 2 s then 4 s, is not waited).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { APOLOGY, misconfiguredReply } from "../../src/agent/Turn.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as ChatServer from "../support/ChatCompletionsServer.js"
import * as Cli from "../support/Cli.js"
import { sandbox } from "../support/Sandbox.js"

const ANTHROPIC = { ANTHROPIC_API_KEY: "test-key-not-secret" }

describe("a piped run's exit status", () => {
  it.live("0 when every message got a real answer (a slash command's reply counts as one)", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const box = yield* sandbox({ ...ANTHROPIC, ANTHROPIC_BASE_URL: server.url })
      const result = yield* Cli.run(["run"], { cwd: box.dir, env: box.env, input: "one\n/usage\ntwo\n" })
      expect(result.stdout.split("\n").filter((line) => line.startsWith("re: "))).toEqual(["re: one", "re: two"])
      expect(result.code).toBe(0)
    }))

  it.live("3 when any reply was the apology, after every message was answered; stderr says how many", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.text("First."),
        AnthropicServer.apiError(529, "overloaded_error", "Overloaded"),
        AnthropicServer.text("Third.")
      ))
      const box = yield* sandbox({ ...ANTHROPIC, ANTHROPIC_BASE_URL: server.url })
      const result = yield* Cli.run(["run"], { cwd: box.dir, env: box.env, input: "one\ntwo\nthree\n" })
      expect(result.stdout).toBe(`First.\n${APOLOGY}\nThird.\n`)
      expect(result.code).toBe(3)
      expect(result.stderr).toContain("planckclaw: 1 of 3 replies said the brain could not answer")
    }))
})

describe("a run whose brain server is not listening", () => {
  for (
    const [brain, env, path, setting] of [
      ["anthropic", (url: string) => ({ ...ANTHROPIC, ANTHROPIC_BASE_URL: url }), "", "ANTHROPIC_BASE_URL"],
      ["openai", (url: string) => ({ OPENAI_BASE_URL: `${url}/v1`, PLANCKCLAW_MODEL: "qwen3:8b" }), "/v1", "OPENAI_BASE_URL"]
    ] as const
  ) {
    it.live(`--brain ${brain}: names the URL in one line at the first attempt, answers every message, exits 3`, () =>
      Effect.gen(function*() {
        const url = yield* ChatServer.unusedUrl
        const box = yield* sandbox({ ...env(url), PLANCKCLAW_BRAIN_RETRIES: "4" })
        const result = yield* Cli.run(["run", "--brain", brain], { cwd: box.dir, env: box.env, input: "one\ntwo\n" })
        const reply = misconfiguredReply("nothing is listening at the model server's address: is it running?")
        expect(result.stdout).toBe(`${reply}\n${reply}\n`)
        const named = `nothing is listening at ${url}${path}: is the model server running?`
        // One line per message names it (the bridge's); no attempt was retried, and nothing says "timeout".
        expect(result.stderr.split("\n").filter((line) => line.includes(named))).toHaveLength(2)
        expect(result.stderr).toContain(`fix ${setting}`)
        expect(result.stderr).not.toMatch(/attempt \d of|timeout/)
        expect(result.code).toBe(3)
      }))
  }
})
