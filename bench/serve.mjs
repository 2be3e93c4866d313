/**
 * Many agents in one process (issue 12): the agent host from dist/ over a
 * real agents directory, with an in-process brain that answers at once and
 * no tools.
 *
 * - 10,000 agents, each sent one message at the same moment through
 *   AgentHost.send: serve_turns_per_s, serve_p50_ms, serve_p99_ms (each from
 *   the burst's start to its reply), serve_rss_mb_10k_active (resident memory
 *   with the 10,000 started, after a GC), serve_rss_mb_10k_released (after
 *   PLANCKCLAW_AGENT_IDLE passed and they were released, after a GC), and the
 *   idle process for reference.
 * - the same burst over the HTTP API on loopback, through BENCH_HTTP_SOCKETS
 *   keep-alive connections (client in the same process): http_requests_per_s,
 *   http_p99_ms.
 *
 * Run: npm run build && node --expose-gc bench/serve.mjs
 */
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { ConfigProvider, Context, Effect, Layer, Logger, LogLevel } from "effect"
import * as HttpServer from "@effect/platform/HttpServer"
import { Brain } from "../dist/Brain.js"
import * as InMemoryClaws from "../dist/claws/InMemoryClaws.js"
import * as AgentHost from "../dist/service/AgentHost.js"
import * as HttpApi from "../dist/service/HttpApi.js"
import { main, progress } from "./lib/child.mjs"
import { percentile, round } from "./lib/stats.mjs"
import { makeWorkDir } from "./lib/work.mjs"

const AGENTS = Number(process.env.BENCH_AGENTS ?? 10_000)
const IDLE_SECONDS = Number(process.env.BENCH_AGENT_IDLE ?? 20)
const SOCKETS = Number(process.env.BENCH_HTTP_SOCKETS ?? 64)

const instantBrain = Layer.succeed(Brain, {
  complete: () => Effect.succeed({ content: [{ type: "text", text: "Noted." }], stop_reason: "end_turn" })
})

const rssMb = () => {
  globalThis.gc?.()
  globalThis.gc?.()
  return round(process.memoryUsage().rss / 1024 / 1024, 1)
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const post = (agent, port, id, body) =>
  new Promise((resolve, reject) => {
    const request = http.request({ host: "127.0.0.1", port, method: "POST", path: `/v1/agents/${id}/messages`, agent, headers: { "content-type": "application/json" } }, (response) => {
      const chunks = []
      response.on("data", (chunk) => chunks.push(chunk))
      response.on("end", () => response.statusCode === 200 ? resolve(Buffer.concat(chunks).toString("utf8")) : reject(new Error(`HTTP ${response.statusCode}: ${Buffer.concat(chunks)}`)))
    })
    request.on("error", reject)
    request.end(body)
  })

/** Sends one message to each agent at once; latencies from the start, in ms. */
const burst = async (ids, send) => {
  const latencies = new Float64Array(ids.length)
  const started = performance.now()
  await Promise.all(ids.map((id, index) => send(id).then(() => { latencies[index] = performance.now() - started })))
  return { wallMs: performance.now() - started, latencies }
}

main(async () => {
  const work = makeWorkDir("serve")
  try {
    const settings = ConfigProvider.fromMap(new Map([
      ["PLANCKCLAW_AGENTS_DIR", path.join(work.dir, "agents")],
      ["PLANCKCLAW_DIR", path.join(work.dir, "memory")],
      ["PLANCKCLAW_AGENT_IDLE", String(IDLE_SECONDS)]
    ]))
    const layer = HttpApi.layer({ host: "127.0.0.1", port: 0 }).pipe(
      Layer.provideMerge(AgentHost.layer),
      Layer.provide(Layer.merge(instantBrain, InMemoryClaws.layer([]))),
      Layer.provide(Layer.merge(Layer.setConfigProvider(settings), Logger.minimumLogLevel(LogLevel.Warning)))
    )
    const ids = Array.from({ length: AGENTS }, (_, n) => `agent-${n}`)
    return await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(layer)
      const host = Context.get(context, AgentHost.AgentHost)
      const port = Context.get(context, HttpServer.HttpServer).address.port
      const run = (effect) => Effect.runPromise(effect)
      const idle = rssMb()
      progress(`serve: ${AGENTS} agents, one message each, at once (idle process ${idle} MB)`)
      const inProcess = yield* Effect.promise(() => burst(ids, (id) => run(host.send(id, { text: "Remember this." }))))
      const active = rssMb()
      const running = (yield* host.list).filter((agent) => agent.state === "running").length
      progress(`serve: ${round(inProcess.wallMs, 0)} ms, ${running} running, ${active} MB; waiting ${IDLE_SECONDS + 2} s for release`)
      yield* Effect.promise(() => sleep((IDLE_SECONDS + 2) * 1000))
      const released = rssMb()
      const stillRunning = (yield* host.list).filter((agent) => agent.state === "running").length

      progress(`http: ${AGENTS} requests over ${SOCKETS} keep-alive connections`)
      const agent = new http.Agent({ keepAlive: true, maxSockets: SOCKETS })
      const body = JSON.stringify({ text: "And this." })
      const overHttp = yield* Effect.promise(() => burst(ids, (id) => post(agent, port, id, body)))
      agent.destroy()
      const lines = fs.readFileSync(path.join(work.dir, "agents", ids[AGENTS - 1], "history.jsonl"), "utf8").split("\n").length - 1

      return {
        agents: AGENTS,
        serve_turns_per_s: Math.round((AGENTS / inProcess.wallMs) * 1000),
        serve_p50_ms: round(percentile(inProcess.latencies, 50), 1),
        serve_p99_ms: round(percentile(inProcess.latencies, 99), 1),
        serve_rss_mb_idle: idle,
        serve_rss_mb_10k_active: active,
        serve_rss_mb_10k_released: released,
        serve_kb_per_active_agent: round(((active - idle) * 1024) / AGENTS, 1),
        running_after_burst: running,
        running_after_idle: stillRunning,
        http_requests_per_s: Math.round((AGENTS / overHttp.wallMs) * 1000),
        http_p50_ms: round(percentile(overHttp.latencies, 50), 1),
        http_p99_ms: round(percentile(overHttp.latencies, 99), 1),
        http_sockets: SOCKETS,
        history_lines_of_last_agent: lines
      }
    })))
  } finally {
    work.remove()
  }
})
