/**
 * `npm run bench`: runs every measurement in a fresh node process, prints a
 * Markdown table (metric, value, ratio to the do-nothing agent, target,
 * result) and writes
 * bench/results.json. Not part of `npm test`.
 *
 *   node --expose-gc bench/run.mjs                 all measurements
 *   node --expose-gc bench/run.mjs history discovery   some (other keys of results.json are kept)
 *
 * PLANCKCLAW_BENCH_REPO=DIR measures another checkout's build (its dist/,
 * bin/, claws/; see lib/work.mjs); bench/compare.mjs runs two builds in
 * alternating rounds and prints them side by side.
 *
 * Fixtures are generated under bench/.work/ (git-ignored) and removed
 * after the last measurement (lib/work.mjs says why not before).
 * Exit status 1 when a measurement fails (a wrong reply, hot reload not
 * honoured, a crash); a missed target is reported, not fatal.
 */
import { fork } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { coresBusyNow, machine } from "./lib/machine.mjs"
import { benchDir, buildDir, deferWorkRemoval, distDir, distFile } from "./lib/work.mjs"

const MEASUREMENTS = ["turn-memory", "turn-fifo", "turn-tail", "syscalls", "discovery", "history", "compaction", "cold-start", "serve", "serve-syscalls", "serve-model", "brain-call", "cluster"]

const atMost = (limit) => (v) => v <= limit
const atLeast = (limit) => (v) => v >= limit

/**
 * Every key with its target (issue 11 for the turn, discovery and start-up
 * figures). FIFO figures come with their ratio to the do-nothing agent
 * (bench/do-nothing.mjs) measured in the same run, interleaved.
 */
const TABLE = [
  { key: "turn_p50_ms_memory", label: "Turn p50, in memory (ms)", target: "≤ 0.3", pass: atMost(0.3) },
  { key: "turn_p99_ms_memory", label: "Turn p99, in memory (ms)" },
  { key: "turn_msgs_per_s_memory", label: "Turns per second, in memory" },
  { key: "turn_tool_p50_ms_memory_in_process_claw", label: "Turn with one tool round p50, in memory, in-process claw (ms)" },
  { key: "turn_tool_p50_ms_memory", label: "Turn with one tool round p50, in memory, claws/time.sh (ms)" },
  { key: "turn_p50_ms_fifo", label: "Turn p50, FIFOs, shipped claws (ms)", target: "≤ 1.0", pass: atMost(1), ratio: "turn_p50_fifo_x_nothing" },
  { key: "turn_p99_ms_fifo", label: "Turn p99, FIFOs, shipped claws (ms)", target: "≤ 3", pass: atMost(3), ratio: "turn_p99_fifo_x_nothing" },
  { key: "turn_p50_ms_fifo_instant_claw", label: "Turn p50, FIFOs, instant claw bridge (ms)", target: "≤ 1.0", pass: atMost(1), ratio: "turn_p50_fifo_instant_claw_x_nothing" },
  { key: "turn_p99_ms_fifo_instant_claw", label: "Turn p99, FIFOs, instant claw bridge (ms)", target: "≤ 3", pass: atMost(3), ratio: "turn_p99_fifo_instant_claw_x_nothing" },
  { key: "turn_tool_p50_ms_fifo_instant_claw", label: "Turn with one tool round p50, FIFOs, instant claw (ms)", target: "≤ 1.0", pass: atMost(1), ratio: "turn_tool_p50_fifo_instant_claw_x_nothing" },
  { key: "turn_tool_p99_ms_fifo_instant_claw", label: "Turn with one tool round p99, FIFOs, instant claw (ms)", target: "≤ 3", pass: atMost(3), ratio: "turn_tool_p99_fifo_instant_claw_x_nothing" },
  { key: "turn_tool_p50_ms_fifo", label: "Turn with one tool round p50, FIFOs, claws/time.sh (ms)" },
  { key: "turn_tool_p99_ms_fifo", label: "Turn with one tool round p99, FIFOs, claws/time.sh (ms)" },
  { key: "turn_tool_cpu_us_fifo", label: "Main-thread CPU per tool round, FIFOs, claws/time.sh (µs)" },
  { key: "turn_p99_ms_fifo_early", label: "Turn p99, FIFOs, shipped claws, turns 301–4,300 of one agent (ms)", ratio: "turn_p99_fifo_early_x_nothing" },
  { key: "turn_p99_ms_fifo_late", label: "Turn p99, FIFOs, shipped claws, turns 20,301–24,300 of the same agent (ms)", target: "≤ 3", pass: atMost(3), ratio: "turn_p99_fifo_late_x_nothing" },
  { key: "turn_other_threads_cpu_us_fifo_early", label: "CPU of the agent's other threads (V8 compiler, GC helpers, libuv) per plain turn, turns 301–4,300 (µs)" },
  { key: "turn_other_threads_cpu_us_fifo_late", label: "CPU of the agent's other threads per plain turn, turns 20,301–24,300 (µs)" },
  { key: "turn_cpu_us_fifo", label: "Main-thread CPU per plain turn, FIFOs, shipped claws (µs)", target: "≤ 800", pass: atMost(800), ratio: "turn_cpu_fifo_x_nothing" },
  { key: "turn_cpu_us_fifo_instant_claw", label: "Main-thread CPU per plain turn, FIFOs, instant claw (µs)", target: "≤ 800", pass: atMost(800), ratio: "turn_cpu_fifo_instant_claw_x_nothing" },
  // Issue 52 item 5: the original assembly agent in the same rounds (only with BENCH_ORIGINAL_AGENT, see docs/performance.md).
  { key: "turn_p50_ms_fifo_original", label: "Original assembly agent: turn p50, FIFOs, instant bridges (ms)" },
  { key: "turn_p99_ms_fifo_original", label: "Original assembly agent: turn p99, FIFOs (ms)" },
  { key: "turn_cpu_us_fifo_original", label: "Original assembly agent: CPU per plain turn (µs)" },
  { key: "turn_p50_fifo_instant_claw_x_original", label: "Turn p50, instant claw ÷ the original's, same rounds", target: "≤ 1.0", pass: atMost(1) },
  { key: "turn_cpu_fifo_instant_claw_x_original", label: "CPU per plain turn, instant claw ÷ the original's, same rounds", target: "≤ 1.2", pass: atMost(1.2) },
  { key: "turn_syscalls_fifo", label: "System calls per plain turn, FIFOs, shipped claws (strace -f -c)", target: "≤ 20", pass: atMost(20), ratio: "turn_syscalls_fifo_x_nothing" },
  { key: "turn_syscalls_fifo_instant_claw", label: "System calls per plain turn, FIFOs, instant claw" },
  { key: "turn_msgs_per_s_fifo", label: "Turns per second, FIFOs, shipped claws" },
  { key: "turn_p50_ms_fifo_nothing", label: "Do-nothing agent: turn p50, FIFOs (ms)" },
  { key: "turn_p99_ms_fifo_nothing", label: "Do-nothing agent: turn p99, FIFOs (ms)" },
  { key: "turn_p99_ms_fifo_nothing_late", label: "Do-nothing agent: turn p99, FIFOs, turns 20,301–24,300 (ms)" },
  { key: "turn_tool_p50_ms_fifo_nothing", label: "Do-nothing agent: tool-round turn p50, FIFOs (ms)" },
  { key: "turn_cpu_us_fifo_nothing", label: "Do-nothing agent: main-thread CPU per turn (µs)" },
  { key: "turn_syscalls_fifo_nothing", label: "Do-nothing agent: system calls per turn" },
  { key: "discovery_ms_1", label: "Claw discovery, 1 claw (ms)" },
  { key: "discovery_ms_100", label: "Claw discovery, 100 claws (ms)" },
  { key: "discovery_ms_1000", label: "Claw discovery, 1000 claws, warm, watched as the agent runs it (ms)", target: "≤ 1", pass: atMost(1) },
  { key: "discovery_scan_ms_1000", label: "Claw discovery, 1000 claws, warm, stat scan (fallback, 5 s safety scan) (ms)" },
  { key: "discovery_cold_ms_1000", label: "Claw discovery, 1000 claws, first list (ms)" },
  { key: "turn_p50_ms_memory_1000_claws", label: "Turn p50 with 1000 claws, in memory (ms)", target: "≤ 5", pass: atMost(5) },
  { key: "history_p50_ms_1kb", label: "Turn p50, 1 KB history (ms)" },
  { key: "history_p50_ms_100mb", label: "Turn p50, 100 MB history (ms)" },
  {
    key: "history_p50_ms_1gb",
    label: "Turn p50, 1 GB history (ms)",
    target: "≤ 1 KB + 10 %",
    pass: (v, all) => typeof all.history_p50_ms_1kb === "number" && v <= all.history_p50_ms_1kb * 1.1
  },
  { key: "compaction_1m_s", label: "Compaction of 1M lines (s)" },
  { key: "compaction_1m_peak_rss_mb", label: "Compaction of 1M lines, peak RSS (MiB)", target: "≤ 200", pass: atMost(200) },
  { key: "cold_start_ms", label: "Cold start to the prompt, default run on a pty (ms)", target: "≤ 250", pass: atMost(250) },
  { key: "cold_start_fifos_ms", label: "Cold start to the six FIFOs, --bridge none (ms)", target: "≤ 250", pass: atMost(250) },
  { key: "cold_start_fifos_x_node", label: "Cold start to the six FIFOs ÷ a bare node -e 0 started just before each" },
  { key: "cold_start_prompt_x_node", label: "Cold start to the prompt ÷ a bare node -e 0 started just before each" },
  { key: "cold_start_first_reply_ms", label: "Cold start to the first reply, --bridge none (ms)" },
  { key: "node_bare_ms", label: "Bare `node -e 0`, spawn to exit (ms)" },
  { key: "version_x_node", label: "`planckclaw --version` ÷ `node -e 0`", target: "≤ 1.5", pass: atMost(1.5) },
  { key: "help_x_node", label: "`planckclaw --help` ÷ `node -e 0`", target: "≤ 1.5", pass: atMost(1.5) },
  { key: "idle_rss_mb", label: "Idle RSS at the prompt (MiB)", target: "≤ 80", pass: atMost(80) },
  { key: "idle_rss_mb_bridge_none", label: "Idle RSS, --bridge none (MiB)" },
  // Issue 12: 10,000 agents in one `serve` process, each sent one message at once, instant brain.
  { key: "serve_agents", label: "serve: agents in the burst (BENCH_AGENTS; the targets are for 10,000)" },
  { key: "serve_turns_per_s", label: "serve: turns per second, 10,000 agents at once, in process", target: "≥ 2000", pass: atLeast(2000) },
  { key: "serve_p50_ms", label: "serve: reply p50 from the burst's start (ms)" },
  { key: "serve_p99_ms", label: "serve: reply p99 from the burst's start (ms)" },
  { key: "serve_cpu_us_per_turn", label: "serve: main-thread CPU per turn, agent start included (µs)" },
  { key: "serve_rss_mb_idle", label: "serve: idle process RSS, same run (MiB)" },
  { key: "serve_rss_mb_10k_active", label: "serve: RSS with 10,000 agents started (MiB)", target: "≤ idle + 977", pass: (v, all) => typeof all.serve_rss_mb_idle === "number" && v <= all.serve_rss_mb_idle + 977 },
  { key: "serve_kb_per_active_agent", label: "serve: RSS per started agent above idle (KiB)", target: "≤ 100", pass: atMost(100) },
  { key: "serve_rss_mb_10k_released", label: "serve: RSS after the 10,000 were released (MiB)", target: "≤ idle + 10", pass: (v, all) => typeof all.serve_rss_mb_idle === "number" && v <= all.serve_rss_mb_idle + 10 },
  { key: "serve_heap_mb_10k_released", label: "serve: V8 heap after release (MiB)", target: "≤ idle heap + 2", pass: (v, all) => typeof all.serve_heap_mb_idle === "number" && v <= all.serve_heap_mb_idle + 2 },
  { key: "serve_heap_mb_idle", label: "serve: V8 heap of the idle process (MiB)" },
  { key: "http_requests_per_s", label: "serve over HTTP: requests per second, keep-alive, load from a second process", target: "≥ 1000", pass: atLeast(1000) },
  { key: "http_p50_ms", label: "serve over HTTP: request p50 (ms)" },
  { key: "http_p99_ms", label: "serve over HTTP: request p99 (ms)" },
  { key: "http_cpu_us_per_request", label: "serve over HTTP: server main-thread CPU per request, agent start included (µs)" },
  { key: "serve_conversation_turns_per_s", label: "serve: turns per second, 100 started agents, a message each at once, round after round" },
  { key: "serve_conversation_cpu_us_per_turn", label: "serve: main-thread CPU per turn of those started agents (µs)" },
  { key: "http_conversation_requests_per_s", label: "serve over HTTP: requests per second, the same started agents, keep-alive" },
  { key: "http_conversation_cpu_us_per_request", label: "serve over HTTP: server main-thread CPU per request to a started agent (µs)" },
  { key: "serve_kib_per_agent", label: "serve: RSS per started agent above idle, after a full GC (KiB)", target: "≤ 50", pass: atMost(50) },
  {
    key: "serve_rss_mb_60s_after_release",
    label: "serve: RSS 60 s after the 10,000 were released, no collection forced (MiB)",
    target: "≤ idle + 50",
    pass: (v, all) => typeof all.serve_rss_mb_idle === "number" && v <= all.serve_rss_mb_idle + 50
  },
  { key: "serve_burst_p50_over_duration", label: "serve: burst of 10,000 at once in process, median reply latency ÷ the burst's length", target: "≤ 0.25", pass: atMost(0.25) },
  { key: "serve_burst_first_reply_ms", label: "serve: burst of 10,000 at once in process, first reply (ms)" },
  { key: "http_layer_cpu_us_per_request", label: "serve's HTTP layer alone (its API over a host answering at once), main-thread CPU per request (µs)" },
  { key: "effect_router_cpu_us_per_request", label: "Effect 4's router alone, same load, main-thread CPU per request (µs)" },
  { key: "http_layer_x_effect_router", label: "serve's HTTP layer ÷ Effect 4's router alone (CPU per request)", target: "≤ 2", pass: atMost(2) },
  // Issue 52 item 2: `planckclaw serve` as users run it, its brain calling a model server on loopback (bench/serve-model.mjs).
  { key: "serve_http_model_req_s_new", label: "serve with a model over HTTP: requests per second, new agents (one message each), 64 connections", target: "≥ 800", pass: atLeast(800) },
  { key: "serve_http_model_p50_ms_new", label: "serve with a model over HTTP: p50, new agents (ms)" },
  { key: "serve_http_model_p99_ms_new", label: "serve with a model over HTTP: p99, new agents (ms)" },
  { key: "serve_http_model_cpu_us_per_request_new", label: "serve with a model over HTTP: main-thread CPU per request, new agents (µs)" },
  { key: "serve_http_model_req_s_started", label: "serve with a model over HTTP: requests per second, 100 started agents, 64 connections", target: "≥ 1500", pass: atLeast(1500) },
  { key: "serve_http_model_p50_ms_started", label: "serve with a model over HTTP: p50, started agents (ms)" },
  { key: "serve_http_model_p99_ms_started", label: "serve with a model over HTTP: p99, started agents (ms)" },
  { key: "serve_http_model_cpu_us_per_request_started", label: "serve with a model over HTTP: main-thread CPU per request, started agents (µs)" },
  { key: "serve_http_model_req_s_restarted", label: "serve with a model over HTTP: requests per second, released agents started again (their files made), 64 connections" },
  { key: "serve_http_model_p50_ms_restarted", label: "serve with a model over HTTP: p50, released agents started again (ms)" },
  { key: "serve_http_model_cpu_us_per_request_restarted", label: "serve with a model over HTTP: main-thread CPU per request, released agents started again (µs)" },
  { key: "effect_router_req_s", label: "Effect 4's router alone, same load: requests per second" },
  { key: "node_http_req_s", label: "Bare node:http server, same load: requests per second" },
  { key: "node_http_cpu_us_per_request", label: "Bare node:http server: main-thread CPU per request (µs)" },
  { key: "serve_syscalls_first_message", label: "serve: system calls for a new agent's first message, main thread (strace -c, futex left out)" },
  { key: "serve_syscalls_next_message", label: "serve: system calls for a started agent's next message, main thread (strace -c, futex left out)" },
  // One brain call to a model server on loopback (bench/brain-call.mjs): the client's main-thread CPU, beside bare clients.
  { key: "brain_http_cpu_us_per_call", label: "Brain call over HTTP, the dearest shipped row below (whole or streamed), main-thread CPU per call (µs)", target: "≤ 500", pass: atMost(500) },
  { key: "fetch_cpu_us_per_call", label: "Bare `fetch` of the same request, main-thread CPU per call (µs)" },
  { key: "brain_call_cpu_us_anthropic_shipped", label: "Brain call, AnthropicBrain over the shipped client (undici, loaded at first call), main-thread CPU per call (µs)", target: "≤ 500", pass: atMost(500), ratio: "brain_call_anthropic_shipped_x_bare_fetch", ratioOf: "bare fetch" },
  { key: "brain_call_cpu_us_anthropic_shipped_stream", label: "Brain call, AnthropicBrain over the shipped client, streamed, main-thread CPU per call (µs)", target: "≤ 500", pass: atMost(500), ratio: "brain_call_anthropic_shipped_stream_x_bare_fetch", ratioOf: "bare fetch" },
  { key: "brain_call_cpu_us_openai_shipped", label: "Brain call, OpenAiBrain (Chat Completions) over the shipped client, main-thread CPU per call (µs)", target: "≤ 500", pass: atMost(500), ratio: "brain_call_openai_shipped_x_bare_fetch", ratioOf: "bare fetch" },
  { key: "brain_call_cpu_us_openai_shipped_stream", label: "Brain call, OpenAiBrain over the shipped client, streamed, main-thread CPU per call (µs)", target: "≤ 500", pass: atMost(500), ratio: "brain_call_openai_shipped_stream_x_bare_fetch", ratioOf: "bare fetch" },
  { key: "brain_call_cpu_us_anthropic_fetch", label: "Brain call, AnthropicBrain over Effect's fetch client, main-thread CPU per call (µs)", ratio: "brain_call_anthropic_fetch_x_bare_fetch", ratioOf: "bare fetch" },
  { key: "brain_call_cpu_us_anthropic_fetch_stream", label: "Brain call, AnthropicBrain over fetch, streamed, main-thread CPU per call (µs)", ratio: "brain_call_anthropic_fetch_stream_x_bare_fetch", ratioOf: "bare fetch" },
  { key: "brain_call_cpu_us_anthropic_undici", label: "Brain call, AnthropicBrain over Effect's undici client, main-thread CPU per call (µs)", ratio: "brain_call_anthropic_undici_x_bare_fetch", ratioOf: "bare fetch" },
  { key: "brain_call_cpu_us_anthropic_node_http", label: "Brain call, AnthropicBrain over Effect's node:http client (keep-alive), main-thread CPU per call (µs)", ratio: "brain_call_anthropic_node_http_x_bare_fetch", ratioOf: "bare fetch" },
  { key: "brain_call_cpu_us_openai_fetch", label: "Brain call, OpenAiBrain over fetch, main-thread CPU per call (µs)", ratio: "brain_call_openai_fetch_x_bare_fetch", ratioOf: "bare fetch" },
  { key: "brain_call_cpu_us_bare_fetch", label: "Bare `fetch` of the same request, main-thread CPU per call (µs)" },
  { key: "brain_call_cpu_us_bare_http", label: "Bare `node:http` request, main-thread CPU per call (µs)", ratio: "brain_call_bare_http_x_bare_fetch", ratioOf: "bare fetch" },
  { key: "brain_call_cpu_us_bare_fetch_stream", label: "Bare `fetch` of the same request, streamed (SSE), main-thread CPU per call (µs)" },
  { key: "brain_call_p50_ms_anthropic_shipped", label: "Brain call, AnthropicBrain over the shipped client, p50 (ms)" },
  { key: "brain_call_p50_ms_bare_fetch", label: "Bare `fetch`, p50 (ms)" },
  // Issues 16 and 52: runners of `serve --cluster` against one throwaway PostgreSQL, 1,000 agents, instant brain.
  { key: "cluster_agents", label: "cluster: agents in each burst (BENCH_CLUSTER_AGENTS)" },
  { key: "cluster_turns_per_s_1_runner", label: "cluster: turns per second, 1,000 new agents at once over HTTP, 1 runner" },
  { key: "cluster_turns_per_s_2_runners", label: "cluster: turns per second, 1,000 new agents at once over HTTP, 2 runners" },
  { key: "cluster_scaling_2_over_1", label: "cluster: 2 runners' turns/s over 1 runner's, new agents (same run)", target: "≥ 1.6", pass: atLeast(1.6) },
  { key: "cluster_turns_per_s_1_runner_started", label: "cluster: turns per second, the same agents started, 1 runner" },
  { key: "cluster_turns_per_s_2_runners_started", label: "cluster: turns per second, the same agents started, 2 runners" },
  { key: "cluster_scaling_2_over_1_started", label: "cluster: 2 runners' turns/s over 1 runner's, started agents (same run)" },
  { key: "cluster_failover_s", label: "cluster: SIGKILL of a runner until its agents answer again, nothing lost or repeated (s)", target: "≤ 5", pass: atMost(5) },
  { key: "cluster_lock_expiration_s", label: "cluster: PLANCKCLAW_CLUSTER_LOCK_EXPIRATION used for failover (s)" }
]

const runMeasurement = (name) =>
  new Promise((resolve, reject) => {
    process.stderr.write(`${name}\n`)
    const started = performance.now()
    const child = fork(path.join(benchDir, `${name}.mjs`), [], {
      execArgv: ["--expose-gc"],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    let result
    child.on("message", (message) => {
      result = message
    })
    child.once("error", reject)
    child.once("exit", (code, signal) => {
      const seconds = Math.round((performance.now() - started) / 100) / 10
      process.stderr.write(`  (${seconds} s)\n`)
      if (code === 0 && result !== undefined) resolve(result)
      else reject(new Error(`bench ${name} failed (${code ?? signal})`))
    })
  })

const format = (value) =>
  value === null || value === undefined ? "skipped" : typeof value === "number" ? String(value) : String(value)

const table = (metrics) => {
  const rows = ["| Metric | Value | ÷ do-nothing | Target | Result |", "|---|---:|---:|---|---|"]
  for (const row of TABLE) {
    if (!(row.key in metrics)) continue
    const value = metrics[row.key]
    const result = row.pass === undefined ? "" : typeof value !== "number" ? "skipped" : row.pass(value, metrics) ? "pass" : "**miss**"
    const ratio = row.ratio !== undefined && typeof metrics[row.ratio] === "number" ? `×${metrics[row.ratio]}${row.ratioOf ? ` ${row.ratioOf}` : ""}` : ""
    rows.push(`| ${row.label} | ${format(value)} | ${ratio} | ${row.target ?? ""} | ${result} |`)
  }
  return rows.join("\n")
}

const main = async () => {
  if (!fs.existsSync(distFile(distDir, "cli/bin.js"))) {
    throw new Error("dist/ is missing: run `npm run bench` (it builds first) or `npm run build`")
  }
  const wanted = process.argv.slice(2)
  const unknown = wanted.filter((name) => !MEASUREMENTS.includes(name))
  if (unknown.length > 0) throw new Error(`unknown measurement(s) ${unknown.join(", ")}; choose from ${MEASUREMENTS.join(", ")}`)
  const selected = wanted.length > 0 ? MEASUREMENTS.filter((name) => wanted.includes(name)) : MEASUREMENTS

  const loadBefore = os.loadavg()[0]
  const busyBefore = await coresBusyNow()
  const metrics = {}
  const notes = []
  for (const name of selected) {
    const result = await runMeasurement(name)
    Object.assign(metrics, result.metrics)
    notes.push(...(result.notes ?? []))
  }
  const loadAfter = os.loadavg()[0]

  const file = path.join(benchDir, "results.json")
  const previous = wanted.length > 0 && fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {}
  const info = { ...machine(buildDir), coresBusyBefore: busyBefore, loadAverage1mBefore: loadBefore, loadAverage1mAfter: loadAfter }
  const busy = busyBefore ?? loadBefore
  if (busy > info.cores / 2) {
    const measured = busyBefore === undefined ? "1-minute load average" : "cores in use in the second before the run"
    notes.push(`the machine was busy (${measured} ${busy.toFixed(2)} of ${info.cores}): figures are pessimistic`)
  }
  const { machine: _m, notes: _n, ...previousMetrics } = previous
  const results = { ...previousMetrics, ...metrics, machine: info, notes }
  fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`)

  const all = { ...previousMetrics, ...metrics }
  console.log(`\n${table(all)}\n`)
  console.log(`${info.cpu}, ${info.cores} cores, ${info.memoryGiB} GiB, ${info.os}, Node ${info.node}${info.commit ? `, commit ${info.commit}` : ""}`)
  for (const note of notes) console.log(`Note: ${note}`)
  console.log(`Wrote ${path.relative(process.cwd(), file)}`)
}

// Each measurement's files are deleted after the last one, not between them (see lib/work.mjs).
const tidy = deferWorkRemoval()

main()
  .catch((error) => {
    console.error(error instanceof Error ? error.message : error)
    process.exitCode = 1
  })
  .finally(tidy)
