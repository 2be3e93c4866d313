/**
 * Two builds side by side over the FIFOs (not part of `npm run bench`):
 *
 *   node bench/ab-fifo.mjs DIST_A DIST_B [TURNS] [ROUNDS]
 *
 * DIST_A and DIST_B are copies of `dist/` (after `npm run build`) kept
 * inside this checkout, so their imports find its node_modules, e.g.
 * `cp -r dist bench/.work/dist-before`. Each build runs `dist/cli/bin.js run`
 * twice (shipped claws, and the instant external claw) and the do-nothing
 * agent once, all driven as turn-fifo.mjs drives them, in alternating
 * batches: plain turns, and tool rounds with the instant claw. Prints p50
 * and main-thread CPU per turn (kernel accounting) of each, and each as a
 * ratio to the do-nothing agent of the same rounds, and B's CPU and p50 over
 * A's, round by round (the median of the per-round ratios). HISTORY_MAX=100000 keeps
 * compaction out, so the figures are the turn's own.
 */
import * as path from "node:path"
import { mainThreadCpuUs } from "./lib/cpu.mjs"
import { REPLY, TOOL_PREFIX, TOOL_REPLY } from "./lib/fifo.mjs"
import { doNothing, planckclaw } from "./lib/fifo-agents.mjs"
import { median, round } from "./lib/stats.mjs"
import { makeWorkDir, nodeExecutable } from "./lib/work.mjs"

const [distA, distB] = [process.argv[2], process.argv[3]].map((d) => path.resolve(d))
const TURNS = Number(process.argv[4] ?? 2000)
const ROUNDS = Number(process.argv[5] ?? 20)
const PLAIN = "What should I remember about this run?"
const TOOL = `${TOOL_PREFIX} what time is it?`

const work = makeWorkDir("ab-fifo")
const brain = nodeExecutable(work.dir, "brain", "brain.mjs")
const claw = nodeExecutable(work.dir, "claw", "claw.mjs")
const agent = (dist, name, clawArg) => planckclaw(work, name, brain, clawArg, { dist, env: { HISTORY_MAX: "100000" } })
const started = []
try {
  for (const [dist, tag] of [[distA, "A"], [distB, "B"]]) {
    started.push({ tag: `${tag} shipped`, a: await agent(dist, `${tag}-shipped`, "scripts") })
    started.push({ tag: `${tag} instant`, a: await agent(dist, `${tag}-instant`, claw) })
  }
  const nothing = await doNothing(work, brain, claw)
  started.push({ tag: "do-nothing", a: nothing })
  const byTag = Object.fromEntries(started.map((s) => [s.tag, s.a]))
  const workloads = [
    ["do-nothing plain", nothing, PLAIN, REPLY],
    ["A shipped plain", byTag["A shipped"], PLAIN, REPLY],
    ["B shipped plain", byTag["B shipped"], PLAIN, REPLY],
    ["A instant plain", byTag["A instant"], PLAIN, REPLY],
    ["B instant plain", byTag["B instant"], PLAIN, REPLY],
    ["do-nothing tool", nothing, TOOL, TOOL_REPLY],
    ["A instant tool", byTag["A instant"], TOOL, TOOL_REPLY],
    ["B instant tool", byTag["B instant"], TOOL, TOOL_REPLY]
  ].map(([name, a, message, expected]) => ({ name, a, message, expected, samples: [], cpu: 0, roundP50: [], roundCpu: [] }))
  const ask = async (w) => {
    const reply = await w.a.client.ask(w.message)
    if (reply.text !== w.expected) throw new Error(`${w.name}: unexpected reply ${reply.text}`)
    return reply.ms
  }
  for (const w of workloads) for (let i = 0; i < 300; i++) await ask(w)
  const batch = Math.ceil(TURNS / ROUNDS)
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate the order of A and B between rounds as well.
    const order = r % 2 === 0 ? workloads : [...workloads].reverse()
    for (const w of order) {
      const samples = []
      const cpu0 = mainThreadCpuUs(w.a.pid)
      for (let i = 0; i < batch; i++) samples.push(await ask(w))
      const cpu = mainThreadCpuUs(w.a.pid) - cpu0
      w.cpu += cpu
      w.samples.push(...samples)
      w.roundP50.push(median(samples))
      w.roundCpu.push(cpu / batch)
    }
  }
  const floor = { plain: workloads[0], tool: workloads[5] }
  for (const w of workloads) {
    const f = w.name.endsWith("tool") ? floor.tool : floor.plain
    const p50 = median(w.samples)
    const cpu = w.cpu / w.samples.length
    const p50x = median(w.roundP50.map((v, i) => v / f.roundP50[i]))
    const cpux = median(w.roundCpu.map((v, i) => v / f.roundCpu[i]))
    console.log(
      `${w.name.padEnd(18)} p50 ${round(p50, 3)} ms (×${round(p50x, 2)})  CPU ${round(cpu, 1)} µs/turn (×${round(cpux, 2)})`
    )
  }
  // Paired: B's figure over A's in the same round, the median over rounds (what alternating buys).
  const byName = Object.fromEntries(workloads.map((w) => [w.name, w]))
  for (const kind of ["shipped plain", "instant plain", "instant tool"]) {
    const a = byName[`A ${kind}`]
    const b = byName[`B ${kind}`]
    const cpu = median(b.roundCpu.map((v, i) => v / a.roundCpu[i]))
    const p50 = median(b.roundP50.map((v, i) => v / a.roundP50[i]))
    console.log(`B/A ${kind.padEnd(14)} CPU ×${round(cpu, 3)}  p50 ×${round(p50, 3)}  (median of ${ROUNDS} rounds)`)
  }
} finally {
  for (const s of started.reverse()) await s.a.stop()
  work.remove()
}
