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
 */
import { main, progress } from "./lib/child.mjs"
import { mainThreadCpuUs, processCpuUs } from "./lib/cpu.mjs"
import { REPLY, TOOL_PREFIX, TOOL_REPLY } from "./lib/fifo.mjs"
import { doNothing, planckclaw } from "./lib/fifo-agents.mjs"
import { latencySummary, median, round } from "./lib/stats.mjs"
import { makeWorkDir, nodeExecutable } from "./lib/work.mjs"

const ITERATIONS = Number(process.env.BENCH_TURNS ?? 2000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 40)
const PLAIN = "What should I remember about this run?"
const TOOL = `${TOOL_PREFIX} what time is it?`

const ask = async (client, message, expected) => {
  const reply = await client.ask(message)
  if (reply.text !== expected) throw new Error(`unexpected reply ${JSON.stringify(reply.text)} to ${message}`)
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
    const n = ITERATIONS
    const [plain, toolShell, plainInstant, toolInstant, nothingPlain, nothingTool] = await interleaved([
      { name: "planckclaw plain, shipped claws", agent: shipped, message: PLAIN, expected: REPLY, iterations: n, warmup: 300 },
      { name: "planckclaw tool round, claws/time.sh", agent: shipped, message: TOOL, expected: TOOL_REPLY, iterations: Math.round(n / 8), warmup: 20 },
      { name: "planckclaw plain, instant claw", agent: instant, message: PLAIN, expected: REPLY, iterations: n, warmup: 300 },
      { name: "planckclaw tool round, instant claw", agent: instant, message: TOOL, expected: TOOL_REPLY, iterations: Math.round(n / 2), warmup: 100 },
      { name: "do-nothing plain", agent: nothing, message: PLAIN, expected: REPLY, iterations: n, warmup: 300 },
      { name: "do-nothing tool round", agent: nothing, message: TOOL, expected: TOOL_REPLY, iterations: Math.round(n / 2), warmup: 100 }
    ])
    for (const s of [plain, toolShell, plainInstant, toolInstant, nothingPlain, nothingTool]) {
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
        ...ratios
      },
      detail: {
        rounds: ROUNDS,
        medianOfRoundRatiosP50: {
          plain: roundRatio(plain, nothingPlain),
          plainInstantClaw: roundRatio(plainInstant, nothingPlain),
          toolInstantClaw: roundRatio(toolInstant, nothingTool)
        },
        plain,
        toolShippedClaw: toolShell,
        plainInstantClaw: plainInstant,
        toolInstantClaw: toolInstant,
        nothingPlain,
        nothingTool
      }
    }
  } finally {
    for (const agent of started.reverse()) await agent.stop()
    work.remove()
  }
})
