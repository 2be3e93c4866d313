/**
 * The built `planckclaw serve` as a child process, on a free loopback port,
 * against an Anthropic stand-in on loopback, for the suites of its
 * connections and its stop.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import * as AnthropicServer from "./AnthropicServer.js"
import * as Cli from "./Cli.js"
import { eventually, sandbox } from "./Sandbox.js"

/** A sandbox whose brain is a loopback server answering with `handler`; agents under `agents/`. */
export const setup = (handler: AnthropicServer.Handler, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(handler)
    const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: server.url, ...extra }, "planckclaw-serve-")
    const agents = box.path("agents")
    const history = (id: string) => {
      const file = path.join(agents, id, "history.jsonl")
      return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
    }
    return { server, box, agents, history, env: box.envWith({ PLANCKCLAW_AGENTS_DIR: agents }) }
  })

/** Starts `serve` on a free loopback port; its port once it says where it listens. */
export const startServe = (cwd: string, env: NodeJS.ProcessEnv, options: { readonly openFileLimit?: number } = {}) =>
  Effect.gen(function*() {
    const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0"], { cwd, env, ...options })
    const stderr = () => Effect.runSync(running.stderrSoFar)
    const port = Number(yield* eventually("serve to say where it listens", () => /HTTP API on 127\.0\.0\.1:(\d+)/.exec(stderr())?.[1]))
    return { running, port, base: `http://127.0.0.1:${port}`, stderr }
  })

/** A message's POST with fetch: its status and parsed body. */
export const postMessage = (base: string, id: string, text: string, headers: Record<string, string> = {}) =>
  Effect.tryPromise(() =>
    fetch(`${base}/v1/agents/${id}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ text })
    }).then(async (response) => ({ status: response.status, body: (await response.json()) as Record<string, unknown> }))
  )
