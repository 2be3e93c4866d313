/**
 * 1b. Turn overhead over the six FIFOs, side by side with the do-nothing
 * agent (bench/do-nothing.mjs), interleaved: every round runs one batch of
 * each workload in turn, so a busy moment of the machine weighs on all alike
 * and every figure can be given as a ratio to the floor measured in the same
 * minute.
 *
 * Agents, each started once and driven from this process through
 * interact_in / interact_out exactly as an external interact bridge would:
 *
 * - planckclaw, shipped claws: the built `planckclaw run --bridge none
 *   --brain bench/brain.mjs --claw scripts` (CLAWS_DIR=claws/): discovery
 *   of the shipped claws runs in-process on the far end of claw_in/claw_out.
 * - planckclaw, instant claw: the same with `--claw bench/claw.mjs`, the
 *   instant external claw: the very bridges the do-nothing agent gets.
 * - do-nothing: bench/do-nothing.mjs with bench/brain.mjs and bench/claw.mjs.
 *
 * Brain and claw bridges are node processes that answer at once
 * (lib/fifo.mjs), so neither fork/exec nor a model is in the figures. The
 * tool round with the shipped claws runs claws/time.sh (fork/exec of sh).
 *
 * CPU: the main thread's time on a CPU (kernel accounting, lib/cpu.mjs) over
 * each timed batch, divided by its turns. Shipped settings, so the every-80th
 * compaction of planckclaw is in its figures (the do-nothing agent has none).
 *
 * The original assembly agent, when BENCH_ORIGINAL_AGENT names its built
 * binary (frntn/planckclaw, built outside this repository; see "The original
 * agent, side by side" in docs/performance.md): one more plain-turn workload
 * in the same rounds, with the same instant brain and claw bridges, started
 * as its launcher starts it (lib/process.mjs). Its turn has our turn's shape:
 * `__list_tools__` on claw_in, one brain request (its built-in soul, which is
 * also planckclaw's default, the last HISTORY_KEEP lines, the message, the
 * tools), the exchange appended to history.jsonl, the reply line. Its
 * defaults are ours, HISTORY_MAX 200 and HISTORY_KEEP 40: it compacts when
 * history.jsonl reaches 200 lines (planckclaw: above 200), every 80th turn,
 * inside the turn before the reply, with a request the instant brain knows
 * by the same system prompt; both rows carry their compactions. Two faults
 * of the original show there (snapshot d4b8edb): its compaction leaves a
 * register on the stack and it dies of SIGSEGV at its first one (turn 100),
 * so it is measured built with that one `push r12` removed (docs; a binary
 * that dies fails the run), and its compaction turn replies with the summary
 * (the compaction's answer overwrites the reply), which is accepted here as
 * its reply. What is not levelled, and weighs on our side only: planckclaw's anchored cache window
 * (PLANCKCLAW_PROMPT_CACHE, on by default) sends 40 to 80 history lines where
 * the original sends 40, and planckclaw checks and journals what the
 * original does not. The original is single-threaded, so its main-thread CPU
 * is all of its CPU.
 */
import { main, progress } from "./lib/child.mjs"
import { mainThreadCpuUs, processCpuUs } from "./lib/cpu.mjs"
import { REPLY, SUMMARY, TOOL_PREFIX, TOOL_REPLY } from "./lib/fifo.mjs"
import { doNothing, originalAgent, planckclaw } from "./lib/fifo-agents.mjs"
import { latencySummary, median, round } from "./lib/stats.mjs"
import { makeWorkDir, nodeExecutable } from "./lib/work.mjs"

const ITERATIONS = Number(process.env.BENCH_TURNS ?? 2000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 40)
const PLAIN = "What should I remember about this run?"
const TOOL = `${TOOL_PREFIX} what time is it?`
/** The original assembly agent's built binary, to run beside ours (unset: not run). */
const ORIGINAL = process.env.BENCH_ORIGINAL_AGENT || undefined

/** `expected`: the reply, or the replies the agent may give (the original's compaction turn, see above). */
const ask = async (client, message, expected) => {
  const reply = await client.ask(message)
  if (Array.isArray(expected) ? !expected.includes(reply.text) : reply.text !== expected) {
    throw new Error(`unexpected reply ${JSON.stringify(reply.text)} to ${message}`)
  }
  return reply.ms
}

/**
 * Workloads: { name, agent (lib/fifo-agents.mjs), message, expected, iterations, warmup }.
 * Each gets its latencies, wall time, and main-thread and whole-process CPU
 * over its timed batches.
 */
const interleaved = async (workloads) => {
  for (const w of workloads) {
    for (let i = 0; i < w.warmup; i++) await ask(w.agent.client, w.message, w.expected)
  }
  const results = workloads.map(() => ({ samples: [], wallMs: 0, cpuUs: 0, processCpuUs: 0, roundP50: [] }))
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < workloads.length; k++) {
      const w = workloads[k]
      const r = results[k]
      const batch = Math.ceil(w.iterations / ROUNDS)
      const pid = w.agent.agent.pid
      const samples = []
      const cpu0 = mainThreadCpuUs(pid)
      const all0 = processCpuUs(pid)
      const t0 = performance.now()
      for (let i = 0; i < batch; i++) samples.push(await ask(w.agent.client, w.message, w.expected))
      r.wallMs += performance.now() - t0
      r.cpuUs += mainThreadCpuUs(pid) - cpu0
      r.processCpuUs += processCpuUs(pid) - all0
      r.samples.push(...samples)
      r.roundP50.push(median(samples))
    }
  }
  return workloads.map((w, k) => {
    const r = results[k]
    const summary = latencySummary(r.samples, r.wallMs)
    return {
      name: w.name,
      ...summary,
      cpuUsPerTurn: round(r.cpuUs / r.samples.length, 1),
      processCpuUsPerTurn: round(r.processCpuUs / r.samples.length, 1),
      roundP50: r.roundP50.map((v) => round(v, 4))
    }
  })
}

/** a / b, and the median over rounds of the per-round ratio of p50s (what interleaving buys). */
const ratio = (a, b) => round(a / b, 2)
const roundRatio = (a, b) => round(median(a.roundP50.map((v, i) => v / b.roundP50[i])), 2)

main(async () => {
  const work = makeWorkDir("turn-fifo")
  const brain = nodeExecutable(work.dir, "brain", "brain.mjs")
  const claw = nodeExecutable(work.dir, "claw", "claw.mjs")
  const started = []
  try {
    const shipped = await planckclaw(work, "shipped", brain, "scripts")
    started.push(shipped)
    const instant = await planckclaw(work, "instant", brain, claw)
    started.push(instant)
    const nothing = await doNothing(work, brain, claw)
    started.push(nothing)
    const original = ORIGINAL === undefined ? undefined : await originalAgent(work, ORIGINAL, brain, claw)
    if (original !== undefined) started.push(original)
    const n = ITERATIONS
    const [plain, toolShell, plainInstant, toolInstant, nothingPlain, nothingTool, originalPlain] = await interleaved([
      { name: "planckclaw plain, shipped claws", agent: shipped, message: PLAIN, expected: REPLY, iterations: n, warmup: 300 },
      { name: "planckclaw tool round, claws/time.sh", agent: shipped, message: TOOL, expected: TOOL_REPLY, iterations: Math.round(n / 8), warmup: 20 },
      { name: "planckclaw plain, instant claw", agent: instant, message: PLAIN, expected: REPLY, iterations: n, warmup: 300 },
      { name: "planckclaw tool round, instant claw", agent: instant, message: TOOL, expected: TOOL_REPLY, iterations: Math.round(n / 2), warmup: 100 },
      { name: "do-nothing plain", agent: nothing, message: PLAIN, expected: REPLY, iterations: n, warmup: 300 },
      { name: "do-nothing tool round", agent: nothing, message: TOOL, expected: TOOL_REPLY, iterations: Math.round(n / 2), warmup: 100 },
      ...(original === undefined
        ? []
        : [{ name: "original (assembly) plain", agent: original, message: PLAIN, expected: [REPLY, SUMMARY], iterations: n, warmup: 300 }])
    ])
    for (const s of [plain, toolShell, plainInstant, toolInstant, nothingPlain, nothingTool, ...(originalPlain ? [originalPlain] : [])]) {
      progress(`${s.name}: p50 ${s.p50} ms, p99 ${s.p99} ms, ${s.msgsPerSec} msg/s, main-thread CPU ${s.cpuUsPerTurn} µs/turn (n=${s.n})`)
    }
    const ratios = {
      turn_p50_fifo_x_nothing: ratio(plain.p50, nothingPlain.p50),
      turn_p99_fifo_x_nothing: ratio(plain.p99, nothingPlain.p99),
      turn_p50_fifo_instant_claw_x_nothing: ratio(plainInstant.p50, nothingPlain.p50),
      turn_p99_fifo_instant_claw_x_nothing: ratio(plainInstant.p99, nothingPlain.p99),
      turn_tool_p50_fifo_instant_claw_x_nothing: ratio(toolInstant.p50, nothingTool.p50),
      turn_tool_p99_fifo_instant_claw_x_nothing: ratio(toolInstant.p99, nothingTool.p99),
      turn_cpu_fifo_x_nothing: ratio(plain.cpuUsPerTurn, nothingPlain.cpuUsPerTurn),
      turn_cpu_fifo_instant_claw_x_nothing: ratio(plainInstant.cpuUsPerTurn, nothingPlain.cpuUsPerTurn)
    }
    progress(`ratios to the do-nothing agent: ${JSON.stringify(ratios)}`)
    const beside = originalPlain === undefined ? {} : {
      turn_p50_ms_fifo_original: originalPlain.p50,
      turn_p99_ms_fifo_original: originalPlain.p99,
      turn_cpu_us_fifo_original: originalPlain.cpuUsPerTurn,
      turn_p50_fifo_instant_claw_x_original: ratio(plainInstant.p50, originalPlain.p50),
      turn_cpu_fifo_instant_claw_x_original: ratio(plainInstant.cpuUsPerTurn, originalPlain.cpuUsPerTurn)
    }
    if (originalPlain !== undefined) {
      progress(`beside the original: ${JSON.stringify(beside)}, instant claw p99 over do-nothing ${ratios.turn_p99_fifo_instant_claw_x_nothing}`)
    }
    return {
      metrics: {
        turn_p50_ms_fifo: plain.p50,
        turn_p99_ms_fifo: plain.p99,
        turn_msgs_per_s_fifo: plain.msgsPerSec,
        turn_cpu_us_fifo: plain.cpuUsPerTurn,
        turn_tool_p50_ms_fifo: toolShell.p50,
        turn_tool_p99_ms_fifo: toolShell.p99,
        turn_tool_cpu_us_fifo: toolShell.cpuUsPerTurn,
        turn_p50_ms_fifo_instant_claw: plainInstant.p50,
        turn_p99_ms_fifo_instant_claw: plainInstant.p99,
        turn_cpu_us_fifo_instant_claw: plainInstant.cpuUsPerTurn,
        turn_tool_p50_ms_fifo_instant_claw: toolInstant.p50,
        turn_tool_p99_ms_fifo_instant_claw: toolInstant.p99,
        turn_tool_cpu_us_fifo_instant_claw: toolInstant.cpuUsPerTurn,
        turn_p50_ms_fifo_nothing: nothingPlain.p50,
        turn_p99_ms_fifo_nothing: nothingPlain.p99,
        turn_cpu_us_fifo_nothing: nothingPlain.cpuUsPerTurn,
        turn_tool_p50_ms_fifo_nothing: nothingTool.p50,
        turn_tool_p99_ms_fifo_nothing: nothingTool.p99,
        ...ratios,
        ...beside
      },
      detail: {
        rounds: ROUNDS,
        medianOfRoundRatiosP50: {
          plain: roundRatio(plain, nothingPlain),
          plainInstantClaw: roundRatio(plainInstant, nothingPlain),
          toolInstantClaw: roundRatio(toolInstant, nothingTool),
          ...(originalPlain === undefined ? {} : { plainInstantClawOverOriginal: roundRatio(plainInstant, originalPlain) })
        },
        plain,
        toolShippedClaw: toolShell,
        plainInstantClaw: plainInstant,
        toolInstantClaw: toolInstant,
        nothingPlain,
        nothingTool,
        ...(originalPlain === undefined ? {} : { originalPlain })
      }
    }
  } finally {
    for (const agent of started.reverse()) await agent.stop()
    work.remove()
  }
})
