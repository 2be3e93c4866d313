/**
 * 6. System calls per plain turn over the FIFOs, counted by the system's own
 * tool: `strace -f -c` around the whole agent process (every thread, and any
 * child it starts), one run of N turns and one of zero turns (start, FIFOs
 * in place, bridges open, stop); (calls(N) - calls(0)) / N per system call.
 *
 * Bridges: the same instant brain and claw code as the latency bench
 * (lib/fifo.mjs), served from this process (`--brain none`, `--claw none`)
 * so strace counts the agent alone. Agents:
 *
 * - planckclaw, shipped claws (`--claw scripts`, in-process discovery of
 *   claws/): the `turn_syscalls_fifo` figure.
 * - planckclaw, instant claw (`--claw none`, served from here).
 * - the do-nothing agent, same bridges.
 *
 * The same again without -f, which strace then limits to node's main thread
 * (`*_main_thread` keys, TURNS / 2 turns).
 *
 * Shipped settings: the every-80th compaction is in planckclaw's figure.
 * Skipped, with a note, when strace is not installed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { main, progress } from "./lib/child.mjs"
import { fifoPaths, interactClient, REPLY, serveBrain, serveClaws } from "./lib/fifo.mjs"
import { startAgentProcess, startDoNothing } from "./lib/process.mjs"
import { round } from "./lib/stats.mjs"
import { hasStrace, parseStraceSummary, perTurn } from "./lib/strace.mjs"
import { clawsDir, makeWorkDir } from "./lib/work.mjs"

const TURNS = Number(process.env.BENCH_STRACE_TURNS ?? 2000)
const MAIN_TURNS = Math.max(1, Math.round(TURNS / 2))
const PLAIN = "What should I remember about this run?"

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** One traced run of `turns` plain turns; returns the per-syscall counts. */
const tracedRun = async (work, kind, turns, tag, follow = true) => {
  const runDir = path.join(work.dir, `${kind}-${tag}-run`)
  const output = path.join(work.dir, `${kind}-${tag}.strace`)
  const wrapper = ["strace", ...(follow ? ["-f"] : []), "-c", "-U", "calls,errors,name", "-o", output]
  const agent = kind === "nothing"
    ? startDoNothing({ runDir, cwd: work.dir, wrapper })
    : startAgentProcess({
      args: ["--bridge", "none", "--brain", "none", "--claw", kind === "shipped" ? "scripts" : "none"],
      runDir,
      memoryDir: path.join(work.dir, `${kind}-${tag}-memory`),
      cwd: work.dir,
      env: { CLAWS_DIR: clawsDir },
      wrapper
    })
  const closers = []
  try {
    await agent.fifosReady()
    const paths = fifoPaths(runDir)
    closers.push(serveBrain(paths))
    if (kind !== "shipped") closers.push(serveClaws(paths))
    const client = interactClient(paths)
    closers.push(() => client.close())
    for (let i = 0; i < turns; i++) {
      const reply = await client.ask(PLAIN)
      if (reply.text !== REPLY) throw new Error(`unexpected reply ${JSON.stringify(reply.text)}`)
    }
    await sleep(200)
    process.kill(agent.nodePid(), "SIGTERM")
    await agent.stop()
    return parseStraceSummary(fs.readFileSync(output, "utf8"))
  } catch (error) {
    await agent.stop()
    throw new Error(`${error.message}\nstderr:\n${agent.stderr()}`)
  } finally {
    for (const close of closers) close()
  }
}

main(async () => {
  if (!hasStrace()) {
    return { metrics: { turn_syscalls_fifo: null }, notes: ["syscalls: strace not installed, turn_syscalls_fifo skipped"] }
  }
  const work = makeWorkDir("syscalls")
  try {
    const result = {}
    for (const kind of ["shipped", "instant", "nothing"]) {
      const baseline = await tracedRun(work, kind, 0, "zero")
      const withTurns = await tracedRun(work, kind, TURNS, "turns")
      result[kind] = perTurn(withTurns, baseline, TURNS)
      const top = result[kind].byCall.slice(0, 10).map((row) => `${row.name} ${row.calls}${row.errors > 0 ? ` (${row.errors} failing)` : ""}`)
      progress(`${kind}: ${result[kind].total} system calls per plain turn, all threads: ${top.join(", ")}`)
      // Without -f strace follows only the first thread: node's main thread.
      const mainZero = await tracedRun(work, kind, 0, "main-zero", false)
      const mainTurns = await tracedRun(work, kind, MAIN_TURNS, "main-turns", false)
      result[`${kind}MainThread`] = perTurn(mainTurns, mainZero, MAIN_TURNS)
      progress(`${kind}: ${result[`${kind}MainThread`].total} on the main thread alone`)
    }
    return {
      metrics: {
        turn_syscalls_fifo: result.shipped.total,
        turn_syscalls_fifo_instant_claw: result.instant.total,
        turn_syscalls_fifo_nothing: result.nothing.total,
        turn_syscalls_fifo_x_nothing: round(result.shipped.total / result.nothing.total, 2),
        turn_syscalls_fifo_main_thread: result.shippedMainThread.total,
        turn_syscalls_fifo_instant_claw_main_thread: result.instantMainThread.total,
        turn_syscalls_fifo_nothing_main_thread: result.nothingMainThread.total
      },
      detail: { turns: TURNS, mainThreadTurns: MAIN_TURNS, ...result }
    }
  } finally {
    work.remove()
  }
})
