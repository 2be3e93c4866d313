/**
 * `serve` as users run it (issue 52 item 2): the built command
 * (`planckclaw serve`) in its own process, its brain (Anthropic, or
 * Chat Completions with BENCH_MODEL_BRAIN=openai) calling a model server on
 * loopback (bench/lib/model-server.mjs, answering at once) in a third, and
 * the load from a fourth over 64 keep-alive connections (BENCH_HTTP_SOCKETS).
 * The server's CPU is read from /proc, so nothing of the load or the model
 * counts.
 *
 * - serve_http_model_req_s_new, _p50_ms_new, _p99_ms_new,
 *   _cpu_us_per_request_new: BENCH_MODEL_AGENTS (5,000) new agents, one
 *   message each (each started by its message);
 * - serve_http_model_req_s_started and the same figures _started: 100 of
 *   them, started, sent BENCH_MODEL_ROUNDS (30) messages each;
 * - serve_http_model_req_s_restarted and the same figures _restarted: once
 *   all were released (PLANCKCLAW_AGENT_IDLE 20 s here), each agent sent one
 *   message again: started anew, its files already made;
 * - beside them, in the same run and under the same load: Effect 4's router
 *   alone (bench/lib/bare-router.mjs, the same route with nothing behind it)
 *   and a bare node:http server: effect_router_req_s, node_http_req_s,
 *   node_http_cpu_us_per_request (the HTTP layer's CPU beside the router's
 *   is bench/serve.mjs's row).
 *
 * Before the timed phases: 300 new agents and 10 rounds of 100 started ones
 * (the JIT has seen both paths).
 *
 * Run: npm run build && node bench/serve-model.mjs
 * (PLANCKCLAW_BENCH_REPO=DIR: another checkout's build, see bench/compare.mjs)
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { main, progress } from "./lib/child.mjs"
import { forkServer, httpBurst, processCpuUs, processRssMb } from "./lib/http-burst.mjs"
import { percentile, round } from "./lib/stats.mjs"
import { binPath, makeWorkDir } from "./lib/work.mjs"

const AGENTS = Number(process.env.BENCH_MODEL_AGENTS ?? 5000)
const ROUNDS = Number(process.env.BENCH_MODEL_ROUNDS ?? 30)
const SOCKETS = Number(process.env.BENCH_HTTP_SOCKETS ?? 64)
const BRAIN = process.env.BENCH_MODEL_BRAIN ?? "anthropic"
const TALKING = 100
// Longer than the new agents' burst takes, so none is released during it.
const IDLE_SECONDS = 20

/** `planckclaw serve --http 127.0.0.1:0` over `home`, its brain at the model server: { child, port }. */
const startServe = (home, modelPort) =>
  new Promise((resolve, reject) => {
    const model = `http://127.0.0.1:${modelPort}`
    const child = spawn(process.execPath, [binPath, "serve", "--http", "127.0.0.1:0", "--brain", BRAIN], {
      env: {
        PATH: process.env.PATH,
        HOME: home,
        PLANCKCLAW_HOME: home,
        PLANCKCLAW_AGENT_IDLE: String(IDLE_SECONDS),
        ANTHROPIC_BASE_URL: model,
        ANTHROPIC_API_KEY: "bench-key",
        OPENAI_BASE_URL: `${model}/v1`,
        OPENAI_API_KEY: "bench-key"
      },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let said = ""
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (text) => {
      // The last of what it said, for a failure's message (a brain that failed says why).
      said = (said + text).slice(-4000)
      const listening = /HTTP API on 127\.0\.0\.1:(\d+)/.exec(said)
      if (listening !== null) resolve({ child, port: Number(listening[1]), said: () => said })
    })
    child.once("error", reject)
    child.once("exit", (code) => reject(new Error(`planckclaw serve exited with ${code} before listening:\n${said}`)))
  })

/** A load against a server process: requests/s, p50/p99 (ms), the server's CPU per request (µs). */
const measure = async (pid, port, ids) => {
  const before = processCpuUs(pid)
  const load = await httpBurst(port, ids, { sockets: SOCKETS })
  const after = processCpuUs(pid)
  return {
    perSecond: Math.round((ids.length / load.wallMs) * 1000),
    p50: round(percentile(load.latencies, 50), 1),
    p99: round(percentile(load.latencies, 99), 1),
    mainCpuUs: Math.round((after.main - before.main) / ids.length),
    allCpuUs: Math.round((after.all - before.all) / ids.length)
  }
}

const rounds = (ids, count) => Array.from({ length: ids.length * count }, (_, n) => ids[n % ids.length])

main(async () => {
  const work = makeWorkDir("serve-model")
  const children = []
  let serve
  try {
    fs.mkdirSync(path.join(work.dir, "claws"))
    const model = await forkServer("model-server.mjs")
    children.push(model.child)
    serve = await startServe(work.dir, model.port)
    children.push(serve.child)
    const pid = serve.child.pid

    progress(`serve-model: warm-up, 300 new agents and 10 rounds of ${TALKING} (brain ${BRAIN})`)
    await httpBurst(serve.port, Array.from({ length: 300 }, (_, n) => `warm-up-${n}`), { sockets: SOCKETS })
    await httpBurst(serve.port, rounds(Array.from({ length: TALKING }, (_, n) => `warm-up-${n}`), 10), { sockets: SOCKETS })

    progress(`serve-model: ${AGENTS} new agents, one message each`)
    const ids = Array.from({ length: AGENTS }, (_, n) => `agent-${n}`)
    const fresh = await measure(pid, serve.port, ids)
    progress(`serve-model: ${fresh.perSecond}/s; ${TALKING} of them, ${ROUNDS} rounds`)
    const started = await measure(pid, serve.port, rounds(ids.slice(0, TALKING), ROUNDS))
    const rss = processRssMb(pid)
    progress(`serve-model: ${started.perSecond}/s; ${IDLE_SECONDS + 5} s for their release, then each sent one more`)
    await new Promise((resolve) => setTimeout(resolve, (IDLE_SECONDS + 5) * 1000))
    const restarted = await measure(pid, serve.port, ids)
    const lines = fs.readFileSync(path.join(work.dir, "agents", ids[0], "history.jsonl"), "utf8").split("\n").length - 1
    if (lines !== 2 * (ROUNDS + 2)) throw new Error(`agent ${ids[0]} has ${lines} history lines after ${ROUNDS + 2} exchanges`)

    progress(`serve-model: Effect 4's router alone, then node:http, ${ROUNDS * TALKING} requests each`)
    const baseline = async (kind) => {
      const server = await forkServer("bare-router.mjs", [kind])
      children.push(server.child)
      await httpBurst(server.port, rounds(ids.slice(0, TALKING), 10), { sockets: SOCKETS })
      return measure(server.child.pid, server.port, rounds(ids.slice(0, TALKING), ROUNDS))
    }
    const router = await baseline("effect")
    const node = await baseline("node")

    return {
      metrics: {
        serve_http_model_agents: AGENTS,
        serve_http_model_req_s_new: fresh.perSecond,
        serve_http_model_p50_ms_new: fresh.p50,
        serve_http_model_p99_ms_new: fresh.p99,
        serve_http_model_cpu_us_per_request_new: fresh.mainCpuUs,
        serve_http_model_process_cpu_us_per_request_new: fresh.allCpuUs,
        serve_http_model_req_s_started: started.perSecond,
        serve_http_model_p50_ms_started: started.p50,
        serve_http_model_p99_ms_started: started.p99,
        serve_http_model_cpu_us_per_request_started: started.mainCpuUs,
        serve_http_model_process_cpu_us_per_request_started: started.allCpuUs,
        serve_http_model_req_s_restarted: restarted.perSecond,
        serve_http_model_p50_ms_restarted: restarted.p50,
        serve_http_model_p99_ms_restarted: restarted.p99,
        serve_http_model_cpu_us_per_request_restarted: restarted.mainCpuUs,
        serve_http_model_rss_mb: rss,
        effect_router_req_s: router.perSecond,
        node_http_req_s: node.perSecond,
        node_http_cpu_us_per_request: node.mainCpuUs
      },
      notes: []
    }
  } catch (error) {
    throw serve === undefined ? error : new Error(`${error.message}\nwhat planckclaw serve said last:\n${serve.said()}`)
  } finally {
    // Removed once they have exited: a serve still stopping writes into its agents' directories.
    await Promise.all(children.map((child) =>
      child.exitCode !== null || child.signalCode !== null
        ? undefined
        : new Promise((resolve) => {
          child.once("exit", resolve)
          child.kill("SIGTERM")
        })
    ))
    work.remove()
  }
})
