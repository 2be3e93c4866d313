/**
 * Two builds, measured in alternating rounds in one run, side by side: the
 * old figure, the new, new ÷ old, and whether the new build is worse than
 * the old by more than the bound (10 %). See bench/README.md for how to
 * prepare the old build's checkout.
 *
 *   node --expose-gc bench/compare.mjs --old DIR --new DIR [--rounds N] [--bound 0.1] [--json FILE] [KEY...]
 *
 * KEYs are measurements of run.mjs: turn-fifo, cold-start, serve, serve-model,
 * brain-call (all five by default). DIR is a checkout with its dist/ built
 * and its node_modules/ installed (`npm ci`); `--new .` is this one. Each
 * round runs every KEY once per build, each run a fresh node process with
 * PLANCKCLAW_BENCH_REPO=DIR (lib/work.mjs: that checkout's dist/, bin/,
 * claws/; lib/build.mjs: its Effect), the old build first in even rounds
 * and the new first in odd ones, so a busy minute of the machine weighs on
 * both alike. The measuring code is this checkout's for both builds.
 *
 * Each figure is the median over rounds; new ÷ old is the median of the
 * rounds' ratios (each round's two runs were back to back), with their
 * range beside it. A row "worse by more than the bound" is one where that
 * ratio exceeds 1 + bound (for figures where lower is better) or falls
 * below 1 / (1 + bound) (higher is better). Compare a build with itself
 * (two checkouts of one commit) to see the noise floor of the machine: a
 * claim smaller than that spread is no claim.
 *
 * Exit status 1 when a measurement failed for either build (its rows say
 * so); a row worse than the bound is reported, not fatal.
 *
 * Node: both builds run on this node (process.execPath). An older build on
 * a newer Node may print V8 flag errors (main on Node 24: `--interrupt-budget`
 * is unknown, so its early tier-up is off): cold-start notes say so.
 */
import { fork } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { coresBusyNow, machine } from "./lib/machine.mjs"
import { round } from "./lib/stats.mjs"
import { benchDir, deferWorkRemoval } from "./lib/work.mjs"

const KEYS = ["turn-fifo", "cold-start", "serve", "serve-model", "brain-call"]

/**
 * The rows, by measurement: `better` says which way is good; `gate`: held
 * to the bound (the issue's Performance rows); `target`: an absolute target
 * for the new build's figure.
 */
const ROWS = [
  // turn-fifo: over the six FIFOs, each beside the do-nothing agent of the same run.
  { key: "turn_p50_fifo_x_nothing", label: "Turn p50, FIFOs, shipped claws ÷ do-nothing agent", better: "lower", gate: true },
  { key: "turn_p99_fifo_x_nothing", label: "Turn p99, FIFOs, shipped claws ÷ do-nothing agent", better: "lower", gate: true },
  { key: "turn_p50_fifo_instant_claw_x_nothing", label: "Turn p50, FIFOs, instant claw ÷ do-nothing agent", better: "lower", gate: true },
  { key: "turn_p99_fifo_instant_claw_x_nothing", label: "Turn p99, FIFOs, instant claw ÷ do-nothing agent", better: "lower", gate: true },
  { key: "turn_tool_p50_fifo_instant_claw_x_nothing", label: "Turn with one tool round p50, instant claw ÷ do-nothing agent", better: "lower", gate: true },
  { key: "turn_tool_p99_fifo_instant_claw_x_nothing", label: "Turn with one tool round p99, instant claw ÷ do-nothing agent", better: "lower", gate: true },
  { key: "turn_cpu_us_fifo", label: "Main-thread CPU per plain turn, FIFOs, shipped claws (µs)", better: "lower", gate: true, target: { text: "≤ 800", pass: (v) => v <= 800 } },
  { key: "turn_cpu_us_fifo_instant_claw", label: "Main-thread CPU per plain turn, FIFOs, instant claw (µs)", better: "lower", gate: true, target: { text: "≤ 800", pass: (v) => v <= 800 } },
  { key: "turn_cpu_fifo_x_nothing", label: "Main-thread CPU per plain turn, shipped claws ÷ do-nothing agent", better: "lower", gate: true },
  { key: "turn_tool_cpu_us_fifo", label: "Main-thread CPU per tool round, claws/time.sh (µs)", better: "lower" },
  { key: "turn_p50_ms_fifo", label: "Turn p50, FIFOs, shipped claws (ms)", better: "lower" },
  { key: "turn_p99_ms_fifo", label: "Turn p99, FIFOs, shipped claws (ms)", better: "lower" },
  { key: "turn_p50_ms_fifo_nothing", label: "Do-nothing agent: turn p50 (ms), same for both builds", better: "lower" },
  { key: "turn_cpu_us_fifo_nothing", label: "Do-nothing agent: main-thread CPU per turn (µs), same for both builds", better: "lower" },
  // cold-start: each start beside a bare `node -e 0`.
  { key: "cold_start_prompt_x_node", label: "Cold start to the prompt ÷ bare `node -e 0`", better: "lower", gate: true },
  { key: "cold_start_fifos_x_node", label: "Cold start to the six FIFOs ÷ bare `node -e 0`", better: "lower", gate: true },
  { key: "version_x_node", label: "`planckclaw --version` ÷ bare `node -e 0`", better: "lower", gate: true, target: { text: "≤ 1.5", pass: (v) => v <= 1.5 } },
  { key: "help_x_node", label: "`planckclaw --help` ÷ bare `node -e 0`", better: "lower", gate: true, target: { text: "≤ 1.5", pass: (v) => v <= 1.5 } },
  { key: "cold_start_ms", label: "Cold start to the prompt, on a pty (ms)", better: "lower", target: { text: "≤ 250", pass: (v) => v <= 250 } },
  { key: "cold_start_fifos_ms", label: "Cold start to the six FIFOs, --bridge none (ms)", better: "lower" },
  { key: "cold_start_first_reply_ms", label: "Cold start to the first reply, --bridge none (ms)", better: "lower" },
  { key: "node_bare_ms", label: "Bare `node -e 0` (ms), same for both builds", better: "lower" },
  { key: "idle_rss_mb", label: "Idle RSS at the prompt (MiB)", better: "lower" },
  // serve: many agents in one process.
  { key: "serve_turns_per_s", label: "serve: turns per second, BENCH_AGENTS agents at once", better: "higher", gate: true },
  { key: "serve_kb_per_active_agent", label: "serve: RSS per started agent above idle (KiB)", better: "lower", gate: true, target: { text: "≤ 100", pass: (v) => v <= 100 } },
  { key: "serve_cpu_us_per_turn", label: "serve: main-thread CPU per turn, agent start included (µs)", better: "lower", gate: true },
  { key: "serve_conversation_cpu_us_per_turn", label: "serve: main-thread CPU per turn of a started agent (µs)", better: "lower", gate: true },
  { key: "serve_rss_mb_idle", label: "serve: idle process RSS (MiB)", better: "lower" },
  { key: "http_requests_per_s", label: "serve over HTTP: requests per second", better: "higher" },
  { key: "http_cpu_us_per_request", label: "serve over HTTP: server main-thread CPU per request, agent start included (µs)", better: "lower" },
  { key: "http_conversation_cpu_us_per_request", label: "serve over HTTP: server main-thread CPU per request to a started agent (µs)", better: "lower" },
  // serve-model: the built `planckclaw serve`, its brain calling a model server on loopback, over HTTP.
  { key: "serve_http_model_req_s_new", label: "serve with a model over HTTP: requests per second, new agents", better: "higher" },
  { key: "serve_http_model_cpu_us_per_request_new", label: "serve with a model over HTTP: main-thread CPU per request, new agents (µs)", better: "lower" },
  { key: "serve_http_model_req_s_started", label: "serve with a model over HTTP: requests per second, started agents", better: "higher" },
  { key: "serve_http_model_cpu_us_per_request_started", label: "serve with a model over HTTP: main-thread CPU per request, started agents (µs)", better: "lower" },
  // brain-call: one call to a model server on loopback, the client's main-thread CPU.
  { key: "brain_http_cpu_us_per_call", label: "Brain call over the shipped client, the dearest of whole and streamed, both brains: main-thread CPU (µs)", better: "lower", gate: true, target: { text: "≤ 500", pass: (v) => v <= 500 } },
  { key: "brain_call_cpu_us_anthropic_shipped", label: "Brain call, AnthropicBrain over the shipped client (fetch before BrainHttpClient): main-thread CPU (µs)", better: "lower", gate: true, target: { text: "≤ 500", pass: (v) => v <= 500 } },
  { key: "brain_call_cpu_us_anthropic_shipped_stream", label: "Brain call, AnthropicBrain over the shipped client, streamed: main-thread CPU (µs)", better: "lower", gate: true, target: { text: "≤ 500", pass: (v) => v <= 500 } },
  { key: "brain_call_cpu_us_openai_shipped_stream", label: "Brain call, OpenAiBrain over the shipped client, streamed: main-thread CPU (µs)", better: "lower", gate: true, target: { text: "≤ 500", pass: (v) => v <= 500 } },
  { key: "brain_call_cpu_us_anthropic_fetch", label: "Brain call, AnthropicBrain over fetch: main-thread CPU (µs)", better: "lower" },
  { key: "brain_call_cpu_us_anthropic_undici", label: "Brain call, AnthropicBrain over undici: main-thread CPU (µs)", better: "lower" },
  { key: "brain_call_cpu_us_openai_fetch", label: "Brain call, OpenAiBrain (Chat Completions) over fetch: main-thread CPU (µs)", better: "lower" },
  { key: "brain_call_anthropic_fetch_x_bare_fetch", label: "Brain call, AnthropicBrain over fetch ÷ bare `fetch` of the same run", better: "lower" },
  { key: "brain_call_cpu_us_bare_fetch", label: "Bare `fetch`, same request: main-thread CPU (µs), same for both builds", better: "lower" },
  { key: "brain_call_cpu_us_bare_http", label: "Bare `node:http`, same request: main-thread CPU (µs), same for both builds", better: "lower" },
  { key: "brain_call_cpu_us_bare_fetch_stream", label: "Bare `fetch`, streamed: main-thread CPU (µs), same for both builds", better: "lower" },
  { key: "brain_call_p50_ms_anthropic_fetch", label: "Brain call, AnthropicBrain over fetch: p50 (ms)", better: "lower" }
]

const usage = "usage: node --expose-gc bench/compare.mjs --old DIR --new DIR [--rounds N] [--bound 0.1] [--json FILE] [KEY...]"

const parseArgs = (argv) => {
  const options = { rounds: 3, bound: 0.1, json: path.join(benchDir, "compare-results.json"), keys: [] }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value\n${usage}`)
      return argv[++i]
    }
    if (arg === "--old") options.old = path.resolve(value())
    else if (arg === "--new") options.new = path.resolve(value())
    else if (arg === "--rounds") options.rounds = Number(value())
    else if (arg === "--bound") options.bound = Number(value())
    else if (arg === "--json") options.json = path.resolve(value())
    else if (arg.startsWith("-")) throw new Error(`unknown option ${arg}\n${usage}`)
    else options.keys.push(arg)
  }
  if (options.old === undefined || options.new === undefined) throw new Error(usage)
  if (!(Number.isInteger(options.rounds) && options.rounds >= 1)) throw new Error("--rounds takes a whole number ≥ 1")
  const unknown = options.keys.filter((key) => !KEYS.includes(key))
  if (unknown.length > 0) throw new Error(`unknown measurement(s) ${unknown.join(", ")}; choose from ${KEYS.join(", ")}`)
  if (options.keys.length === 0) options.keys = KEYS
  return options
}

/** A build's checkout: its dist/ must be built. */
const describe = (name, dir) => {
  for (const file of ["dist", "bin/planckclaw", "node_modules/effect/package.json"]) {
    if (!fs.existsSync(path.join(dir, file))) throw new Error(`${name} build ${dir} has no ${file}: run \`npm ci\` (it builds) or \`npm run build\` there`)
  }
  const effect = JSON.parse(fs.readFileSync(path.join(dir, "node_modules", "effect", "package.json"), "utf8")).version
  const bundled = fs.existsSync(path.join(dir, "dist", "cli", "bin.cjs"))
  return { dir, commit: machine(dir).commit, effect, bundled }
}

/** One measurement of one build, in a fresh node process: its metrics and notes, or its failure. */
const runOnce = (key, dir) =>
  new Promise((resolve) => {
    const started = performance.now()
    let result
    let stderr = ""
    const child = fork(path.join(benchDir, `${key}.mjs`), [], {
      execArgv: ["--expose-gc"],
      env: { ...process.env, PLANCKCLAW_BENCH_REPO: dir },
      stdio: ["ignore", "ignore", "pipe", "ipc"]
    })
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (chunk) => {
      stderr += chunk
      if (stderr.length > 20_000) stderr = stderr.slice(-10_000)
    })
    child.on("message", (message) => {
      result = message
    })
    child.once("exit", (code, signal) => {
      const seconds = round((performance.now() - started) / 1000, 1)
      if (code === 0 && result !== undefined) resolve({ metrics: result.metrics, notes: result.notes ?? [], seconds })
      else resolve({ failed: `exit ${code ?? signal}: ${stderr.trim().split("\n").slice(-3).join(" / ")}`, seconds })
    })
  })

/** The middle value (the mean of the two middle ones for an even count): rounds are few. */
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const half = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2
}

const pct = (ratio) => `${ratio >= 1 ? "+" : "−"}${round(Math.abs(ratio - 1) * 100, 1)} %`
const show = (value) => (typeof value === "number" && Number.isFinite(value) ? String(round(value, value >= 100 ? 0 : 3)) : "—")

/** Old and new figures, the median paired ratio and its range, the verdict. */
const compareRow = (row, runs, bound) => {
  const paired = runs.filter((r) => typeof r.old?.[row.key] === "number" && typeof r.new?.[row.key] === "number")
  const olds = runs.map((r) => r.old?.[row.key]).filter((v) => typeof v === "number")
  const news = runs.map((r) => r.new?.[row.key]).filter((v) => typeof v === "number")
  if (olds.length === 0 && news.length === 0) return undefined
  const ratios = paired.map((r) => r.new[row.key] / r.old[row.key]).filter(Number.isFinite)
  const ratio = ratios.length > 0 ? median(ratios) : Number.NaN
  const worse = row.better === "lower" ? ratio > 1 + bound : ratio < 1 / (1 + bound)
  const value = { old: olds.length > 0 ? median(olds) : Number.NaN, new: news.length > 0 ? median(news) : Number.NaN }
  return {
    ...row,
    old: value.old,
    new: value.new,
    ratio: round(ratio, 3),
    ratioMin: ratios.length > 0 ? round(Math.min(...ratios), 3) : Number.NaN,
    ratioMax: ratios.length > 0 ? round(Math.max(...ratios), 3) : Number.NaN,
    rounds: ratios.length,
    result: !Number.isFinite(ratio) ? "no pair" : !row.gate ? "" : worse ? `**worse ${pct(ratio)}**` : "pass",
    targetResult: row.target === undefined || !Number.isFinite(value.new) ? "" : row.target.pass(value.new) ? "met" : "**missed**"
  }
}

const table = (compared, bound) => {
  const lines = [
    `| Metric | Old | New | New ÷ old (range) | Better | ≤ ${round(bound * 100, 1)} % worse | Target (new) |`,
    "|---|---:|---:|---:|---|---|---|"
  ]
  for (const c of compared) {
    const ratio = Number.isFinite(c.ratio) ? `×${c.ratio.toFixed(3)}${c.rounds > 1 ? ` (${c.ratioMin.toFixed(2)}–${c.ratioMax.toFixed(2)})` : ""}` : "—"
    const target = c.target === undefined ? "" : `${c.target.text}: ${c.targetResult}`
    lines.push(`| ${c.label} | ${show(c.old)} | ${show(c.new)} | ${ratio} | ${c.better} | ${c.result} | ${target} |`)
  }
  return lines.join("\n")
}

const main = async () => {
  const options = parseArgs(process.argv.slice(2))
  const builds = { old: describe("old", options.old), new: describe("new", options.new) }
  for (const [name, build] of Object.entries(builds)) {
    console.error(`${name}: ${build.dir}, commit ${build.commit ?? "?"}, effect ${build.effect}${build.bundled ? "" : ", NO dist/cli bundle: bin/planckclaw cannot start (turn-fifo, cold-start fail)"}`)
  }
  const busyBefore = await coresBusyNow()
  const loadBefore = os.loadavg()[0]
  // runs[key][round] = { old: metrics, new: metrics }
  const runs = Object.fromEntries(options.keys.map((key) => [key, []]))
  const notes = new Set()
  const failures = []
  const seconds = { old: 0, new: 0 }
  for (let r = 0; r < options.rounds; r++) {
    const order = r % 2 === 0 ? ["old", "new"] : ["new", "old"]
    for (const key of options.keys) {
      const pair = {}
      for (const name of order) {
        console.error(`round ${r + 1}/${options.rounds}: ${key}, ${name} build`)
        const outcome = await runOnce(key, builds[name].dir)
        seconds[name] += outcome.seconds
        console.error(`  ${outcome.failed === undefined ? "done" : `FAILED (${outcome.failed})`} in ${outcome.seconds} s`)
        if (outcome.failed !== undefined) failures.push(`${key}, ${name} build, round ${r + 1}: ${outcome.failed}`)
        else {
          pair[name] = outcome.metrics
          for (const note of outcome.notes) notes.add(`${name}: ${note}`)
        }
      }
      runs[key].push(pair)
    }
  }
  const allRuns = Object.values(runs).flat()
  const compared = ROWS.map((row) => compareRow(row, allRuns, options.bound)).filter((c) => c !== undefined)
  const gated = compared.filter((c) => c.gate && Number.isFinite(c.ratio))
  const widest = gated.reduce((most, c) => Math.max(most, Math.abs(c.ratio - 1)), 0)
  const info = { ...machine(benchDir), coresBusyBefore: busyBefore, loadAverage1mBefore: loadBefore, loadAverage1mAfter: os.loadavg()[0] }

  console.log(`\n${table(compared, options.bound)}\n`)
  console.log(`Old: ${builds.old.dir} (${builds.old.commit ?? "?"}, effect ${builds.old.effect}); new: ${builds.new.dir} (${builds.new.commit ?? "?"}, effect ${builds.new.effect}).`)
  console.log(`${options.rounds} round(s) of ${options.keys.join(", ")}, alternating which build goes first; Node ${process.version}; ${info.cpu}, ${info.cores} cores; cores busy in the second before: ${busyBefore ?? "?"}; 1-minute load ${loadBefore.toFixed(2)} → ${info.loadAverage1mAfter.toFixed(2)}.`)
  console.log(`Gated rows: ${gated.filter((c) => c.result === "pass").length} pass, ${gated.filter((c) => c.result !== "pass").length} worse by more than ${round(options.bound * 100, 1)} %; the gated ratio furthest from 1 is ${round(widest * 100, 1)} % off it.`)
  for (const note of notes) console.log(`Note: ${note}`)
  for (const failure of failures) console.log(`FAILED: ${failure}`)

  const results = { machine: info, builds, rounds: options.rounds, bound: options.bound, keys: options.keys, rows: compared.map(({ target, ...c }) => ({ ...c, target: target?.text })), runs, notes: [...notes], failures }
  fs.writeFileSync(options.json, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`Wrote ${path.relative(process.cwd(), options.json)}`)
  if (failures.length > 0) process.exitCode = 1
}

// Each measurement's files are deleted after the last one, not between them (see lib/work.mjs).
const tidy = deferWorkRemoval()

main()
  .catch((error) => {
    console.error(error instanceof Error ? error.message : error)
    process.exitCode = 1
  })
  .finally(tidy)
