/**
 * The built `planckclaw serve` with a tiny PLANCKCLAW_AGENT_IDLE and a brain
 * slow to summarise (loopback): an agent is released after nearly every reply,
 * while the compaction its last exchange started still waits on the brain.
 * The next message must not start a second instance beside that compaction:
 * every exchange answered `stored: true` ends up once in summary or history,
 * and no compaction fails. (The same race under TestClock is
 * test/hosts/serve/IdleRelease.test.ts; this one runs it on real files.)
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Data, Effect } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import { eventually, sandbox } from "../../support/Sandbox.js"

class FetchFailed extends Data.TaggedError("FetchFailed")<{ readonly message: string }> {}

const post = (base: string, id: string, text: string) =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetch(`${base}/v1/agents/${id}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text })
      })
      return { status: response.status, body: await response.json() as unknown }
    },
    catch: (error) => new FetchFailed({ message: String(error) })
  })

const MESSAGES = 24

describe("planckclaw serve: an agent released while its compaction runs (built command)", () => {
  it.live("every exchange answered stored is kept once, in summary or history; no compaction fails", () =>
    Effect.gen(function*() {
      // Each summary takes the brain 150 ms, far past the agent's idle time of 1 ms.
      const server = yield* AnthropicServer.make((request, index) =>
        AnthropicServer.isCompaction(request)
          ? AnthropicServer.delay(150, AnthropicServer.echo(request, index))
          : AnthropicServer.echo(request, index)
      )
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: server.url }, "planckclaw-idle-")
      const agents = box.path("agents")
      const env = box.envWith({
        PLANCKCLAW_AGENTS_DIR: agents,
        PLANCKCLAW_AGENT_IDLE: "0.001",
        HISTORY_MAX: "4",
        HISTORY_KEEP: "2"
      })
      const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0"], { cwd: box.dir, env })
      const stderr = () => Effect.runSync(running.stderrSoFar)
      const port = yield* eventually("serve to say where it listens", () => /HTTP API on 127\.0\.0\.1:(\d+)/.exec(stderr())?.[1])
      const base = `http://127.0.0.1:${port}`

      const texts = Array.from({ length: MESSAGES }, (_, n) => `message ${n}`)
      for (const text of texts) {
        expect(yield* post(base, "forgetful", text)).toEqual({ status: 200, body: { reply: `re: ${text}`, stored: true } })
      }
      running.process.kill("SIGTERM")
      const result = yield* running.done
      expect(result.code, result.stderr).toBe(0)

      const directory = path.join(agents, "forgetful")
      const read = (name: string) => {
        const file = path.join(directory, name)
        return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
      }
      const summarised = AnthropicServer.summaryItems(read("summary.md"))
      const kept = read("history.jsonl").split("\n").filter((line) => line.length > 0)
        .map((line) => JSON.parse(line) as { role: string; content: string })
        .filter((line) => line.role === "user").map((line) => line.content)
      // Each message once, in order: folded into the summary, or still in history.
      expect([...summarised, ...kept]).toEqual(texts)
      expect(summarised.length).toBeGreaterThan(0)
      expect(result.stderr).not.toMatch(/compaction did not run|ENOENT/)
      expect(fs.readdirSync(directory).filter((name) => name.endsWith(".next"))).toEqual([])
    }), 120_000)
})
