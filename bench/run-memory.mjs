/**
 * A long `planckclaw run`'s resident memory: the built command over its
 * FIFOs (`--bridge none`, an instant brain and claw bridge, shipped
 * settings: compaction every 81st turn), BENCH_RUN_TURNS plain turns
 * (default 30,000), its VmRSS read from /proc at checkpoints, and VmHWM (its
 * peak) at the end. Not part of `npm run bench` (a minute or more per Node).
 *
 * BENCH_RUN_NODES: Node executables to run the agent on, comma-separated
 * (default: this one), one after the other, so Node lines compare in one
 * run, e.g.
 *
 *   BENCH_RUN_NODES=/path/node22/bin/node,/path/node24/bin/node node bench/run-memory.mjs
 *
 * BENCH_RUN_NODE_ARGS: Node options for the agent (space-separated).
 */
import { execFileSync } from "node:child_process"
import { REPLY } from "./lib/fifo.mjs"
import { planckclaw } from "./lib/fifo-agents.mjs"
import { round } from "./lib/stats.mjs"
import { makeWorkDir, nodeExecutable, procMemoryMb } from "./lib/work.mjs"

const TURNS = Number(process.env.BENCH_RUN_TURNS ?? 30_000)
const NODES = (process.env.BENCH_RUN_NODES ?? process.execPath).split(",").filter(Boolean)
const CHECKPOINTS = [1_000, 10_000, 20_000, TURNS].filter((n, i, all) => n <= TURNS && all.indexOf(n) === i)
const NODE_ARGS = (process.env.BENCH_RUN_NODE_ARGS ?? "").split(" ").filter(Boolean)
const PLAIN = "What should I remember about this run?"

const runOn = async (node) => {
  const work = makeWorkDir("run-memory")
  const brain = nodeExecutable(work.dir, "brain", "brain.mjs")
  const claw = nodeExecutable(work.dir, "claw", "claw.mjs")
  const agent = await planckclaw(work, "agent", brain, claw, { node, nodeArgs: NODE_ARGS })
  try {
    const rss = {}
    for (let turn = 1; turn <= TURNS; turn++) {
      const reply = await agent.client.ask(PLAIN)
      if (reply.text !== REPLY) throw new Error(`unexpected reply ${JSON.stringify(reply.text)}`)
      if (CHECKPOINTS.includes(turn)) rss[turn] = round(procMemoryMb(agent.pid).rss, 1)
    }
    return { rss, peak: round(procMemoryMb(agent.pid).hwm, 1) }
  } finally {
    await agent.stop()
    work.remove()
  }
}

const results = []
for (const node of NODES) {
  const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim()
  const result = await runOn(node)
  results.push({ version, ...result })
  console.log(`Node ${version}: RSS (MiB) ${CHECKPOINTS.map((n) => `after ${n}: ${result.rss[n]}`).join(", ")}; peak ${result.peak}`)
}
if (results.length > 1) {
  const [first, ...rest] = results
  for (const other of rest) {
    console.log(`Node ${other.version} ÷ Node ${first.version} after ${TURNS} turns: ×${round(other.rss[TURNS] / first.rss[TURNS], 2)}`)
  }
}
