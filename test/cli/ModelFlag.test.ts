/**
 * `--model NAME` on run, serve and compact (the built command) overrides
 * PLANCKCLAW_MODEL: the brain is asked for that model, whatever the
 * environment says. `run` is tried in its plain form (the run-only bundle)
 * and in one only effect/cli reads.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { line } from "../support/Harness.js"
import { eventually, sandbox } from "../support/Sandbox.js"
import { postMessage } from "../support/ServeKit.js"

const setup = (handler: AnthropicServer.Handler, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(handler)
    const box = yield* sandbox({
      ANTHROPIC_API_KEY: "test-key-not-secret",
      ANTHROPIC_BASE_URL: server.url,
      PLANCKCLAW_MODEL: "model-from-env",
      ...extra
    }, "planckclaw-model-flag-")
    return { server, box }
  })

const modelsAsked = (server: AnthropicServer.AnthropicServer) =>
  Effect.map(server.requests, (requests) => requests.map((request) => (request.body as { readonly model?: string }).model))

describe("--model", () => {
  for (const args of [["run", "--model", "model-from-flag"], ["run", "--log-level", "info", "--model", "model-from-flag"]]) {
    it.live(`planckclaw ${args.join(" ")}: the turn asks for the flag's model`, () =>
      Effect.gen(function*() {
        const { box, server } = yield* setup(AnthropicServer.echo)
        const result = yield* Cli.run(args, { cwd: box.dir, env: box.env, input: "hi\n" })
        expect(result.stdout).toBe("re: hi\n")
        expect(yield* modelsAsked(server)).toEqual(["model-from-flag"])
        // Without it, the environment's.
        yield* Cli.run(["run"], { cwd: box.dir, env: box.env, input: "again\n" })
        expect(yield* modelsAsked(server)).toEqual(["model-from-flag", "model-from-env"])
      }))
  }

  it.live("planckclaw compact --model: the summary is asked of the flag's model", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup(AnthropicServer.replies(AnthropicServer.text("A tidy summary.")), { HISTORY_KEEP: "2" })
      fs.mkdirSync(box.memory, { recursive: true })
      const history = Array.from({ length: 6 }, (_, i) => line(i % 2 === 0 ? "user" : "assistant", `m${i}`)).join("")
      fs.writeFileSync(path.join(box.memory, "history.jsonl"), history)
      const result = yield* Cli.run(["compact", "--model", "model-from-flag"], { cwd: box.dir, env: box.env })
      expect(result.code, result.stderr).toBe(0)
      expect(yield* modelsAsked(server)).toEqual(["model-from-flag"])
    }))

  it.live("planckclaw serve --model: every agent's turn asks for the flag's model", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup(AnthropicServer.echo)
      const env = box.envWith({ PLANCKCLAW_AGENTS_DIR: box.path("agents") })
      const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0", "--model", "model-from-flag"], { cwd: box.dir, env })
      const port = yield* eventually("serve to say where it listens", () =>
        /HTTP API on 127\.0\.0\.1:(\d+)/.exec(Effect.runSync(running.stderrSoFar))?.[1])
      const answer = yield* postMessage(`http://127.0.0.1:${port}`, "alice", "hi")
      expect(answer.body.reply).toBe("re: hi")
      expect(yield* modelsAsked(server)).toEqual(["model-from-flag"])
    }))
})
