/**
 * What a shell claw's tool round leaves behind for the plain turns after it
 * (not part of `npm run bench`; run after `npm run build`):
 *
 *   node bench/fork-spill.mjs [ROUNDS] [TOOL_ROUNDS]     default 40, 7
 *
 * Two identical agents (`planckclaw run --claw scripts`, the shipped claws,
 * HISTORY_MAX=100000 so no compaction), driven as turn-fifo.mjs drives
 * them. Before each round, agent X runs TOOL_ROUNDS tool rounds with
 * claws/time.sh (turn-fifo.mjs runs 7 per 50 plain turns on the same agent
 * whose plain turns it times); then each agent runs a timed batch of 50 plain
 * turns, in alternating order. A claw is a child process, and Node forks the
 * whole agent to start it: afterwards every page the agent writes takes a
 * copy-on-write fault once, spread over the plain turns that follow. Prints
 * both agents' plain-turn main-thread CPU (kernel accounting) and minor
 * page faults per plain turn (/proc/PID/stat, exact).
 */
import * as fs from "node:fs"
import { mainThreadCpuUs } from "./lib/cpu.mjs"
import { REPLY, TOOL_PREFIX, TOOL_REPLY } from "./lib/fifo.mjs"
import { planckclaw } from "./lib/fifo-agents.mjs"
import { median, round } from "./lib/stats.mjs"
import { makeWorkDir, nodeExecutable } from "./lib/work.mjs"

const ROUNDS = Number(process.argv[2] ?? 40)
const TOOL_ROUNDS = Number(process.argv[3] ?? 7)
const BATCH = 50

const minorFaults = (pid) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[7])
}

const work = makeWorkDir("fork-spill")
const brain = nodeExecutable(work.dir, "brain", "brain.mjs")
const settings = { env: { HISTORY_MAX: "100000" } }
const started = []
try {
  const withTools = { name: "after tool rounds", agent: await planckclaw(work, "x", brain, "scripts", settings), cpu: [], faults: [] }
  started.push(withTools.agent)
  const plainOnly = { name: "plain turns only", agent: await planckclaw(work, "y", brain, "scripts", settings), cpu: [], faults: [] }
  started.push(plainOnly.agent)
  const ask = async (agent, message, expected) => {
    const reply = await agent.client.ask(message)
    if (reply.text !== expected) throw new Error(`unexpected reply ${reply.text}`)
  }
  const plain = (agent) => ask(agent, "What should I remember about this run?", REPLY)
  for (const w of [withTools, plainOnly]) for (let i = 0; i < 300; i++) await plain(w.agent)
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < TOOL_ROUNDS; i++) await ask(withTools.agent, `${TOOL_PREFIX} what time is it?`, TOOL_REPLY)
    for (const w of r % 2 === 0 ? [withTools, plainOnly] : [plainOnly, withTools]) {
      const cpu0 = mainThreadCpuUs(w.agent.pid)
      const faults0 = minorFaults(w.agent.pid)
      for (let i = 0; i < BATCH; i++) await plain(w.agent)
      w.cpu.push((mainThreadCpuUs(w.agent.pid) - cpu0) / BATCH)
      w.faults.push((minorFaults(w.agent.pid) - faults0) / BATCH)
    }
  }
  for (const w of [withTools, plainOnly]) {
    console.log(`plain turns, ${w.name.padEnd(18)} CPU ${round(median(w.cpu), 1)} µs/turn, ${round(median(w.faults), 2)} minor faults/turn (medians of ${ROUNDS} rounds)`)
  }
  const ratio = median(withTools.cpu.map((v, i) => v / plainOnly.cpu[i]))
  console.log(`CPU after tool rounds ÷ plain only, same round: ×${round(ratio, 3)} (median of ${ROUNDS} rounds)`)
} finally {
  for (const agent of started.reverse()) await agent.stop()
  work.remove()
}
