/**
 * End to end: the built command with `--brain openai` (or PLANCKCLAW_BRAIN)
 * against the loopback Chat Completions server, with the shipped claws and
 * no key (the server is on loopback).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Server from "../support/ChatCompletionsServer.js"
import * as Cli from "../support/Cli.js"
import { line } from "../support/Harness.js"
import { sandbox } from "../support/Sandbox.js"
import * as ScheduleTool from "../../src/schedule/ScheduleTool.js"

const setup = (handler: Server.Handler, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const server = yield* Server.make(handler)
    const box = yield* sandbox({
      OPENAI_BASE_URL: server.url,
      PLANCKCLAW_MODEL: "qwen3:8b",
      CLAWS_DIR: path.join(Cli.REPO, "claws"),
      ...extra
    }, "planckclaw-openai-")
    return { server, box }
  })

interface ChatBody {
  readonly model: string
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content?: unknown; readonly tool_call_id?: string }>
  readonly tools?: ReadonlyArray<{ readonly function: { readonly name: string } }>
}

describe("planckclaw run --brain openai (built command)", () => {
  it.live("runs several shipped claws of one answer on a loopback server without a key, and remembers", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup(Server.replies(
        Server.toolCalls([
          Server.call("call_1", "get_time", "{}"),
          Server.call("call_2", "roll_dice", "{\"sides\":20,\"count\":2}")
        ], { flavor: "ollama" }),
        Server.text("It is noon and you rolled well.", "ollama"),
        Server.text("Hello again.", "ollama")
      ))
      const result = yield* Cli.run(["run", "--brain", "openai"], {
        cwd: box.dir,
        env: box.env,
        input: "what time is it? roll 2d20\nhi\n"
      })
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("It is noon and you rolled well.\nHello again.\n")

      const requests = yield* server.awaitRequests(3)
      expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual(Array(3).fill("POST /v1/chat/completions"))
      expect(requests.every((r) => r.headers.authorization === undefined)).toBe(true)
      const [first, second, third] = requests.map((r) => r.body as ChatBody)
      expect(first!.model).toBe("qwen3:8b")
      expect((first!.tools ?? []).map((tool) => tool.function.name).sort()).toEqual(["get_time", "roll_dice", "system_status", ScheduleTool.ADD, ScheduleTool.LIST, ScheduleTool.REMOVE].sort())
      const results = second!.messages.filter((m) => m.role === "tool")
      expect(results.map((m) => m.tool_call_id)).toEqual(["call_1", "call_2"])
      expect(String(results[0]!.content)).toMatch(/Unix timestamp: \d+/)
      expect(String(results[1]!.content)).toMatch(/^Rolled 2d20: \d+, \d+\nTotal: \d+$/)
      expect(third!.messages.slice(1).map((m) => [m.role, m.content])).toEqual([
        ["user", "what time is it? roll 2d20"],
        ["assistant", "It is noon and you rolled well."],
        ["user", "hi"]
      ])
      expect(box.memoryFile("history.jsonl")).toBe(
        line("user", "what time is it? roll 2d20") + line("assistant", "It is noon and you rolled well.") +
          line("user", "hi") + line("assistant", "Hello again.")
      )
    }))

  it.live("PLANCKCLAW_BRAIN=openai in config.env chooses it; the flag overrides it", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup(Server.replies(Server.text("From the Chat Completions server.")))
      fs.writeFileSync(path.join(box.dir, "config.env"), "export PLANCKCLAW_BRAIN=\"openai\"\n")
      const viaFile = yield* Cli.run(["run"], { cwd: box.dir, env: box.env, input: "hi\n" })
      expect(viaFile.stdout).toBe("From the Chat Completions server.\n")
      expect(yield* server.requests).toHaveLength(1)
      // --brain anthropic wins over the file: without its key it refuses to start.
      const overridden = yield* Cli.run(["run", "--brain", "anthropic"], { cwd: box.dir, env: box.env, input: "hi\n" })
      expect(overridden.code).toBe(2)
      expect(overridden.stderr).toContain("ANTHROPIC_API_KEY is not set")
    }))

  it.live("without PLANCKCLAW_MODEL refuses to start, in one line naming it, and exits 2", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup(Server.replies(Server.text("unused")))
      const { PLANCKCLAW_MODEL: _, ...env } = box.env
      const result = yield* Cli.run(["run", "--brain", "openai"], { cwd: box.dir, env, input: "hi\n" })
      expect(result.code).toBe(2)
      expect(result.stdout).toBe("")
      expect(result.stderr.trim().split("\n")).toHaveLength(1)
      expect(result.stderr).toMatch(/^planckclaw: PLANCKCLAW_MODEL is not set: /)
      expect(yield* server.requests).toHaveLength(0)
    }))

  it.live("a refused key gets the misconfigured reply; the log names OPENAI_API_KEY and never the key", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup(Server.replies(
        Server.apiError(401, "Incorrect API key provided: test-not-a-key", "openai", "invalid_api_key"),
        Server.text("unused")
      ), { OPENAI_API_KEY: "test-not-a-key" })
      const result = yield* Cli.run(["run", "--brain", "openai"], { cwd: box.dir, env: box.env, input: "hi\n" })
      expect(result.code).toBe(3)
      expect(result.stdout).toBe(
        "I can't think right now: my brain is misconfigured (the API key was refused). The log says what to fix.\n"
      )
      expect(result.stderr).toContain("fix OPENAI_API_KEY")
      expect(result.stderr).not.toContain("test-not-a-key")
      expect(yield* server.requests).toHaveLength(1)
      expect(box.memoryFile("history.jsonl") ?? "").toBe("")
    }))

  it.live("an OPENAI_API_KEY a header cannot carry is refused at start, naming the key only", () =>
    Effect.gen(function*() {
      const { box } = yield* setup(Server.replies(Server.text("unused")), { OPENAI_API_KEY: "test key" })
      const result = yield* Cli.run(["run", "--brain", "openai"], { cwd: box.dir, env: box.env, input: "hi\n" })
      expect(result.code).toBe(2)
      expect(result.stderr).toContain("OPENAI_API_KEY")
      expect(result.stderr).not.toContain("test key")
    }))
})
