/**
 * A soul or summary over its limit (256 KiB) refused at start by the built
 * command, naming the file and the limit: `run`, `compact`, `serve` (the
 * host's default soul, and an agent's own at its start) and `doctor`. The
 * brain on loopback is never asked. Needs `npm run build`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { eventually, sandbox, tool } from "../support/Sandbox.js"

const key = "test-key-not-secret"
const model = "claude-haiku-4-5-20251001"
const LIMIT = 256 * 1024
const oversize = "x".repeat(LIMIT + 1)
const refusal = (file: string) =>
  `${file} is ${LIMIT + 1} bytes; a soul or summary may hold at most ${LIMIT} bytes (256 KiB), since every request carries it whole`

/** A brain that answers turns, and the Models API doctor asks. */
const brain: AnthropicServer.Handler = (request, index) =>
  request.method === "GET"
    ? AnthropicServer.respond(200, { type: "model", id: model, display_name: "Claude Haiku 4.5", created_at: "2025-10-01T00:00:00Z" })
    : AnthropicServer.echo(request, index)

const setup = Effect.gen(function*() {
  const server = yield* AnthropicServer.make(brain)
  const box = yield* sandbox({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: server.url }, "planckclaw-prompt-files-")
  return { server, box }
})

describe("a soul or summary over its limit (built command)", () => {
  for (const file of ["soul.md", "summary.md"]) {
    it.live(`run refuses to start with an oversize ${file}: exit 1, the file and the limit named`, () =>
      Effect.gen(function*() {
        const { box, server } = yield* setup
        box.writeMemory(file, oversize)
        const result = yield* Cli.run(["run"], { cwd: box.dir, env: box.env, input: "hi\n" })
        expect(result.code).toBe(1)
        expect(result.stderr).toBe(`planckclaw: ${refusal(path.join(box.memory, file))}: shorten it\n`)
        expect(result.stdout).toBe("")
        expect(yield* server.requests).toEqual([])
      }))
  }

  it.live("compact refuses an oversize summary.md: exit 1, the file and the limit named", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup
      box.writeMemory("summary.md", oversize)
      box.writeMemory("history.jsonl", `${JSON.stringify({ role: "user", content: "hi" })}\n`.repeat(50))
      const result = yield* Cli.run(["compact"], { cwd: box.dir, env: box.env })
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(refusal(path.join(box.memory, "summary.md")))
      expect(yield* server.requests).toEqual([])
    }))

  it.live("serve refuses to start with an oversize default soul (PLANCKCLAW_DIR/soul.md)", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup
      box.writeMemory("soul.md", oversize)
      const env = box.envWith({ PLANCKCLAW_AGENTS_DIR: box.path("agents") })
      const result = yield* Cli.run(["serve", "--http", "127.0.0.1:0"], { cwd: box.dir, env })
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(`planckclaw: ${refusal(path.join(box.memory, "soul.md"))}: shorten it`)
      expect(yield* server.requests).toEqual([])
    }))

  it.live("serve refuses an agent whose own soul is oversize, at its start (503 naming the file); others are answered", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup
      const agents = box.path("agents")
      fs.mkdirSync(path.join(agents, "big"), { recursive: true, mode: 0o700 })
      fs.writeFileSync(path.join(agents, "big", "soul.md"), oversize)
      const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0"], {
        cwd: box.dir,
        env: box.envWith({ PLANCKCLAW_AGENTS_DIR: agents })
      })
      const port = yield* eventually("serve to say where it listens", () =>
        /HTTP API on 127\.0\.0\.1:(\d+)/.exec(Effect.runSync(running.stderrSoFar))?.[1])
      const post = (id: string) =>
        Effect.promise(async () => {
          const response = await fetch(`http://127.0.0.1:${port}/v1/agents/${id}/messages`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ text: "hi" })
          })
          return { status: response.status, body: await response.json() as { error?: string; message?: string; reply?: string } }
        })
      const refused = yield* post("big")
      expect(refused.status).toBe(503)
      expect(refused.body.message).toContain(refusal(path.join(agents, "big", "soul.md")))
      expect(yield* server.requests).toEqual([])
      expect(yield* post("small")).toEqual({ status: 200, body: { reply: "re: hi", stored: true } })
    }))

  it.live("doctor fails the memory check naming the file and the limit, exit 1", () =>
    Effect.gen(function*() {
      const { box } = yield* setup
      box.claw("dice.sh", `${tool("roll_dice")}\necho 4\n`)
      box.writeMemory("soul.md", oversize)
      const result = yield* Cli.run(["doctor"], { cwd: box.dir, env: box.env })
      const failed = result.stdout.split("\n").filter((line) => line.startsWith("✘"))
      expect(failed).toEqual([`✘ memory: ${refusal(path.join(box.memory, "soul.md"))} → shorten it to at most 256 KiB`])
      expect(result.code).toBe(1)
    }))
})
