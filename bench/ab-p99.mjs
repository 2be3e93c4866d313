/**
 * Two builds' tails side by side at shipped settings (not part of `npm run bench`):
 *
 *   node bench/ab-p99.mjs DIST_A DIST_B [TURNS] [ROUNDS] [RUNS]
 *
 * DIST_A and DIST_B are copies of `dist/` kept inside this checkout (see
 * ab-fifo.mjs). Unlike ab-fifo.mjs, compaction stays on (every 81st turn).
 * BENCH_AB_WARM_UP (default 300) untimed turns come first: the bench's
 * window is still V8's warm-up; 16000 compares the builds once it is over.
 * Each run starts both builds (shipped
 * claws) and the do-nothing agent afresh and drives them in alternating
 * batches of plain turns; every other run starts them in the other order,
 * because the agent started second read about 0.5 ms lower at p99 whatever
 * its build. Prints p50, p99, turns over 3 ms and main-thread CPU per turn of
 * each, per run, and the medians over runs of B minus A.
 *
 * One build against itself with a setting or a Node option on one side:
 * BENCH_AB_ENV_A / BENCH_AB_ENV_B (a JSON object of environment variables,
 * e.g. '{"HISTORY_MAX":"100000"}') and BENCH_AB_NODE_ARGS_A /
 * BENCH_AB_NODE_ARGS_B (space-separated, e.g. "--max-semi-space-size=32").
 */
import * as path from "node:path"
import { mainThreadCpuUs } from "./lib/cpu.mjs"
import { REPLY } from "./lib/fifo.mjs"
import { doNothing, planckclaw } from "./lib/fifo-agents.mjs"
import { latencySummary, median, round } from "./lib/stats.mjs"
import { makeWorkDir, nodeExecutable } from "./lib/work.mjs"

const [distA, distB] = [process.argv[2], process.argv[3]].map((d) => path.resolve(d))
const TURNS = Number(process.argv[4] ?? 4050)
const ROUNDS = Number(process.argv[5] ?? 50)
const RUNS = Number(process.argv[6] ?? 4)
const PLAIN = "What should I remember about this run?"
const SLOW_MS = 3
// Untimed turns per agent before the timed ones (BENCH_AB_WARM_UP=16000: the tail once V8 has warmed up).
const WARM_UP = Number(process.env.BENCH_AB_WARM_UP ?? 300)
// Each side's extra environment and Node options (see the header).
const envOf = Object.fromEntries(["A", "B"].map((tag) => [tag, JSON.parse(process.env[`BENCH_AB_ENV_${tag}`] ?? "{}")]))
const nodeArgsOf = Object.fromEntries(
  ["A", "B"].map((tag) => [tag, (process.env[`BENCH_AB_NODE_ARGS_${tag}`] ?? "").split(" ").filter(Boolean)])
)

const runOnce = async (work, order) => {
  const brain = nodeExecutable(work.dir, "brain", "brain.mjs")
  const claw = nodeExecutable(work.dir, "claw", "claw.mjs")
  const agents = []
  try {
    for (const [tag, dist] of order) {
      const a = await planckclaw(work, tag, brain, "scripts", { dist, env: envOf[tag], nodeArgs: nodeArgsOf[tag] })
      agents.push({ tag, a })
    }
    agents.push({ tag: "nothing", a: await doNothing(work, brain, claw) })
    for (const x of agents) {
      x.samples = []
      x.cpuUs = 0
      for (let i = 0; i < WARM_UP; i++) await x.a.client.ask(PLAIN)
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const x of r % 2 === 0 ? agents : [...agents].reverse()) {
        const cpu0 = mainThreadCpuUs(x.a.agent.pid)
        for (let i = 0; i < TURNS / ROUNDS; i++) {
          const reply = await x.a.client.ask(PLAIN)
          if (reply.text !== REPLY) throw new Error(`unexpected reply ${JSON.stringify(reply.text)}`)
          x.samples.push(reply.ms)
        }
        x.cpuUs += mainThreadCpuUs(x.a.agent.pid) - cpu0
      }
    }
    return Object.fromEntries(agents.map((x) => {
      const summary = latencySummary(x.samples, 1)
      return [x.tag, {
        p50: summary.p50,
        p99: summary.p99,
        slow: x.samples.filter((ms) => ms > SLOW_MS).length,
        cpuUs: round(x.cpuUs / x.samples.length, 1)
      }]
    }))
  } finally {
    for (const x of agents) await x.a.stop()
  }
}

const runs = []
for (let run = 0; run < RUNS; run++) {
  const order = run % 2 === 0 ? [["A", distA], ["B", distB]] : [["B", distB], ["A", distA]]
  const result = await runOnce(makeWorkDir("ab-p99"), order)
  runs.push(result)
  const line = (tag) => `${tag} p50 ${result[tag].p50} p99 ${result[tag].p99} >${SLOW_MS}ms ${result[tag].slow} cpu ${result[tag].cpuUs} µs`
  console.log(`run ${run + 1} (${order.map(([tag]) => tag).join(" started before ")}): ${line("A")} | ${line("B")} | ${line("nothing")}`)
}
const delta = (key) => round(median(runs.map((r) => r.B[key] - r.A[key])), 3)
console.log(`B - A, median over ${RUNS} runs: p50 ${delta("p50")} ms, p99 ${delta("p99")} ms, turns over ${SLOW_MS} ms ${delta("slow")}, CPU ${delta("cpuUs")} µs/turn`)
