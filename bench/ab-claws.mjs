/**
 * Two builds with the shipped shell claws, side by side (not part of `npm run bench`):
 *
 *   node bench/ab-claws.mjs DIST_A DIST_B [ROUNDS] [RUNS]      default 40, 2
 *
 * DIST_A and DIST_B are copies of `dist/` kept inside this checkout (see
 * ab-fifo.mjs). A build finds its spawn helper from the nearest
 * package.json above it: for each build to start its own, put a copy of
 * package.json beside each copy (bench/.ab-a/package.json and
 * bench/.ab-a/dist), else both use this checkout's dist/cli/. Each run
 * starts both builds (`dist/cli/bin.js run --claw
 * scripts`, shipped settings, so compaction is on) and drives them as
 * turn-fifo.mjs drives its shipped-claws agent: per round, 50 plain turns,
 * then 7 tool rounds with claws/time.sh (a real child process), build A
 * and build B in alternating order. Every other run starts them in the other
 * order. Prints, per build and run: the plain turns' p50, p99 and
 * main-thread CPU per turn, and the tool rounds' p50, p99 and main-thread
 * CPU per round (kernel accounting, lib/cpu.mjs); then B minus A, the
 * median over runs.
 */
import * as path from "node:path"
import { mainThreadCpuUs } from "./lib/cpu.mjs"
import { REPLY, TOOL_PREFIX, TOOL_REPLY } from "./lib/fifo.mjs"
import { planckclaw } from "./lib/fifo-agents.mjs"
import { median, percentile, round } from "./lib/stats.mjs"
import { makeWorkDir, nodeExecutable } from "./lib/work.mjs"

const [distA, distB] = [process.argv[2], process.argv[3]].map((d) => path.resolve(d))
const ROUNDS = Number(process.argv[4] ?? 40)
const RUNS = Number(process.argv[5] ?? 2)
const PLAIN = "What should I remember about this run?"
const TOOL = `${TOOL_PREFIX} what time is it?`
const PLAIN_BATCH = 50
const TOOL_BATCH = 7

const ask = async (agent, message, expected) => {
  const reply = await agent.client.ask(message)
  if (reply.text !== expected) throw new Error(`unexpected reply ${JSON.stringify(reply.text)}`)
  return reply.ms
}

const runOnce = async (work, order) => {
  const brain = nodeExecutable(work.dir, "brain", "brain.mjs")
  const builds = []
  try {
    for (const [tag, dist] of order) builds.push({ tag, a: await planckclaw(work, `${tag}-${builds.length}`, brain, "scripts", { dist }) })
    for (const b of builds) {
      Object.assign(b, { plain: [], tool: [], plainCpu: 0, toolCpu: 0 })
      for (let i = 0; i < 300; i++) await ask(b.a, PLAIN, REPLY)
      for (let i = 0; i < 20; i++) await ask(b.a, TOOL, TOOL_REPLY)
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
        let cpu0 = mainThreadCpuUs(b.a.agent.pid)
        for (let i = 0; i < PLAIN_BATCH; i++) b.plain.push(await ask(b.a, PLAIN, REPLY))
        let cpu1 = mainThreadCpuUs(b.a.agent.pid)
        b.plainCpu += cpu1 - cpu0
        for (let i = 0; i < TOOL_BATCH; i++) b.tool.push(await ask(b.a, TOOL, TOOL_REPLY))
        b.toolCpu += mainThreadCpuUs(b.a.agent.pid) - cpu1
      }
    }
    return Object.fromEntries(builds.map((b) => [b.tag, {
      plainP50: median(b.plain),
      plainP99: percentile(b.plain, 99),
      plainCpu: b.plainCpu / b.plain.length,
      toolP50: median(b.tool),
      toolP99: percentile(b.tool, 99),
      toolCpu: b.toolCpu / b.tool.length
    }]))
  } finally {
    for (const b of builds.reverse()) await b.a.stop()
  }
}

const work = makeWorkDir("ab-claws")
try {
  const runs = []
  for (let run = 0; run < RUNS; run++) {
    const order = run % 2 === 0 ? [["A", distA], ["B", distB]] : [["B", distB], ["A", distA]]
    const result = await runOnce(work, order)
    runs.push(result)
    for (const tag of ["A", "B"]) {
      const x = result[tag]
      console.log(
        `run ${run + 1} ${tag}: plain p50 ${round(x.plainP50, 3)} p99 ${round(x.plainP99, 2)} ms, CPU ${round(x.plainCpu, 0)} µs; ` +
          `tool round p50 ${round(x.toolP50, 2)} p99 ${round(x.toolP99, 2)} ms, CPU ${round(x.toolCpu, 0)} µs`
      )
    }
  }
  for (const key of ["plainP50", "plainP99", "plainCpu", "toolP50", "toolP99", "toolCpu"]) {
    console.log(`B - A ${key}: ${round(median(runs.map((r) => r.B[key] - r.A[key])), 3)} (median of ${RUNS} runs)`)
  }
} finally {
  work.remove()
}
