/**
 * System calls per message in `serve`, counted by `strace -c` on the main
 * thread (without -f: the thread that serves every agent) of a
 * process running the agent host (bench/lib/serve-host.mjs: instant brain,
 * no tools, default settings), as bench/syscalls.mjs counts a FIFO turn:
 * the difference of runs that differ only in the messages sent.
 *
 * - serve_syscalls_first_message: a new agent's first message, its start
 *   included ((100 agents × 1 message) − (100 agents × 0)) / 100.
 * - serve_syscalls_next_message: a started agent's next message, the agent
 *   among those keeping their files open (PLANCKCLAW_AGENTS_HOLDING_FILES,
 *   128 by default): ((100 × 11) − (100 × 1)) / 1000.
 *
 * `futex` is left out of both totals: on the main thread it is waits on
 * V8's and libuv's worker threads (compiling, collecting garbage), which
 * swing by tens per message from run to run, not the host's own calls.
 *
 * Skipped, with a note, when strace is not installed.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { main, progress } from "./lib/child.mjs"
import { round } from "./lib/stats.mjs"
import { hasStrace, parseStraceSummary, perTurn } from "./lib/strace.mjs"
import { benchDir, makeWorkDir } from "./lib/work.mjs"

const AGENTS = 100
const NEXT_ROUNDS = 10

const tracedRun = (work, rounds) => {
  const dir = path.join(work.dir, `rounds-${rounds}`)
  const output = path.join(work.dir, `rounds-${rounds}.strace`)
  fs.mkdirSync(dir)
  execFileSync("strace", ["-c", "-U", "calls,errors,name", "-o", output, process.execPath, path.join(benchDir, "lib", "serve-host.mjs"), dir, String(AGENTS), String(rounds)], { stdio: ["ignore", "ignore", "inherit"] })
  return parseStraceSummary(fs.readFileSync(output, "utf8"))
}

/** The per-message counts without `futex` (see above). */
const ownCalls = (counted) => {
  const byCall = counted.byCall.filter((row) => row.name !== "futex")
  return { total: round(byCall.reduce((sum, row) => sum + row.calls, 0), 1), byCall, futex: counted.byCall.find((row) => row.name === "futex")?.calls ?? 0 }
}

const top = (counted) => counted.byCall.slice(0, 12).map((row) => `${row.name} ${row.calls}${row.errors > 0 ? ` (${row.errors} failing)` : ""}`).join(", ")

main(async () => {
  if (!hasStrace()) {
    return { metrics: { serve_syscalls_first_message: null, serve_syscalls_next_message: null }, notes: ["serve-syscalls: strace not installed, skipped"] }
  }
  const work = makeWorkDir("serve-syscalls")
  try {
    const none = tracedRun(work, 0)
    const one = tracedRun(work, 1)
    const more = tracedRun(work, 1 + NEXT_ROUNDS)
    const first = ownCalls(perTurn(one, none, AGENTS))
    const next = ownCalls(perTurn(more, one, AGENTS * NEXT_ROUNDS))
    progress(`serve: ${first.total} system calls for a new agent's first message: ${top(first)}`)
    progress(`serve: ${next.total} for a started agent's next message: ${top(next)}`)
    return {
      metrics: { serve_syscalls_first_message: first.total, serve_syscalls_next_message: next.total },
      detail: { agents: AGENTS, nextRounds: NEXT_ROUNDS, first, next }
    }
  } finally {
    work.remove()
  }
})
