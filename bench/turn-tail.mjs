/**
 * 1c. The tail of a plain FIFO turn early and late in one agent's life
 * (in `npm run bench`; alone: `node bench/turn-tail.mjs`, after `npm run
 * build`; BENCH_TAIL_TURNS and BENCH_TAIL_LATER change the counts).
 *
 * Starts planckclaw (shipped claws, the instant brain bridge of
 * lib/fifo.mjs as a node process, shipped settings: compaction every 81st
 * turn) and the do-nothing agent with the same bridges, warms each with 300
 * plain turns, then measures two windows of TURNS plain turns each
 * (default 4000), driven in 40 alternating batches: "early", right after
 * the warm-up, and "late", after LATER more plain turns (default 16,000)
 * sent to each agent untimed. Per agent and window: p50, p99, turns over
 * 3 ms, and the CPU per turn of the agent's main thread and of its other
 * threads (V8's compiler and garbage-collector helpers, libuv's pool),
 * read from the kernel's per-thread accounting (/proc/PID/task/TID/schedstat)
 * at each batch's ends, so the reading costs no turn anything.
 *
 * What it showed (README, Performance): V8 keeps optimising the agent's
 * code on its background threads for the first several thousand turns;
 * those compiles take the cores the turn's chain of processes needs.
 */
import { main, progress } from "./lib/child.mjs"
import { threadsCpuUs } from "./lib/cpu.mjs"
import { REPLY } from "./lib/fifo.mjs"
import { doNothing, planckclaw } from "./lib/fifo-agents.mjs"
import { latencySummary, round } from "./lib/stats.mjs"
import { makeWorkDir, nodeExecutable } from "./lib/work.mjs"

const TURNS = Number(process.env.BENCH_TAIL_TURNS ?? 4000)
const LATER = Number(process.env.BENCH_TAIL_LATER ?? 16_000)
const ROUNDS = 40
const SLOW_MS = 3
const PLAIN = "What should I remember about this run?"

const ask = async (agent) => {
  const reply = await agent.client.ask(PLAIN)
  if (reply.text !== REPLY) throw new Error(`unexpected reply ${JSON.stringify(reply.text)}`)
  return reply.ms
}

const measureWindow = async (agents) => {
  const windows = agents.map(() => ({ samples: [], main: 0, others: 0 }))
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [...agents.keys()] : [...agents.keys()].reverse()
    for (const k of order) {
      const before = threadsCpuUs(agents[k].pid)
      for (let i = 0; i < TURNS / ROUNDS; i++) windows[k].samples.push(await ask(agents[k]))
      const after = threadsCpuUs(agents[k].pid)
      windows[k].main += after.main - before.main
      windows[k].others += after.others - before.others
    }
  }
  return windows.map((w) => {
    const summary = latencySummary(w.samples, 1)
    return {
      p50: summary.p50,
      p99: summary.p99,
      slow: w.samples.filter((ms) => ms > SLOW_MS).length,
      mainCpuUs: round(w.main / w.samples.length, 1),
      otherThreadsCpuUs: round(w.others / w.samples.length, 1)
    }
  })
}

main(async () => {
  const work = makeWorkDir("turn-tail")
  const brain = nodeExecutable(work.dir, "brain", "brain.mjs")
  const claw = nodeExecutable(work.dir, "claw", "claw.mjs")
  const agents = []
  try {
    agents.push(await planckclaw(work, "planckclaw", brain, "scripts"))
    agents.push(await doNothing(work, brain, claw))
    for (const agent of agents) for (let i = 0; i < 300; i++) await ask(agent)
    progress(`turn-tail: turns 301-${300 + TURNS} of each agent`)
    const [early, earlyNothing] = await measureWindow(agents)
    progress(`turn-tail: ${LATER} more, untimed`)
    for (let i = 0; i < LATER; i++) for (const agent of agents) await ask(agent)
    progress(`turn-tail: turns ${300 + TURNS + LATER + 1}-${300 + 2 * TURNS + LATER}`)
    const [late, lateNothing] = await measureWindow(agents)
    return {
      metrics: {
        turn_tail_late_from: 300 + TURNS + LATER + 1,
        turn_p50_ms_fifo_early: early.p50,
        turn_p99_ms_fifo_early: early.p99,
        turn_slow_fifo_early: early.slow,
        turn_cpu_us_fifo_early: early.mainCpuUs,
        turn_other_threads_cpu_us_fifo_early: early.otherThreadsCpuUs,
        turn_p50_ms_fifo_late: late.p50,
        turn_p99_ms_fifo_late: late.p99,
        turn_slow_fifo_late: late.slow,
        turn_cpu_us_fifo_late: late.mainCpuUs,
        turn_other_threads_cpu_us_fifo_late: late.otherThreadsCpuUs,
        turn_p99_ms_fifo_nothing_early: earlyNothing.p99,
        turn_p99_ms_fifo_nothing_late: lateNothing.p99,
        turn_p99_fifo_early_x_nothing: round(early.p99 / earlyNothing.p99, 2),
        turn_p99_fifo_late_x_nothing: round(late.p99 / lateNothing.p99, 2)
      },
      detail: { turns: TURNS, later: LATER, slowMs: SLOW_MS, early, earlyNothing, late, lateNothing }
    }
  } finally {
    for (const agent of agents) await agent.stop()
    work.remove()
  }
})
