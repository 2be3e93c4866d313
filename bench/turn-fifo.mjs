/**
 * 1b. Turn overhead over the six FIFOs: the built `planckclaw run --bridge
 * none` with an external brain process that answers at once (bench/brain.mjs,
 * node, so fork/exec is not in the figure), driven from this process through
 * interact_in / interact_out exactly as an external interact bridge would.
 *
 * - plain: the shipped claws (`--claw scripts`, CLAWS_DIR=claws/): every turn
 *   runs discovery over claw_in/claw_out, no tool call.
 * - tool round: the brain asks for get_time once; with `--claw scripts` that
 *   runs claws/time.sh (a fork/exec of sh and date), with `--claw
 *   bench/claw.mjs` an external claw that answers at once.
 */
import * as path from "node:path"
import { main, progress } from "./lib/child.mjs"
import { fifoPaths, interactClient, REPLY, TOOL_PREFIX, TOOL_REPLY } from "./lib/fifo.mjs"
import { startAgentProcess } from "./lib/process.mjs"
import { latencySummary } from "./lib/stats.mjs"
import { clawsDir, makeWorkDir, nodeExecutable } from "./lib/work.mjs"

const ITERATIONS = Number(process.env.BENCH_TURNS ?? 2000)

const closedLoop = async (client, { message, expected, warmup, iterations }) => {
  for (let i = 0; i < warmup; i++) {
    const reply = await client.ask(message)
    if (reply.text !== expected) throw new Error(`unexpected reply ${JSON.stringify(reply.text)} to ${message}`)
  }
  const samples = []
  const start = performance.now()
  for (let i = 0; i < iterations; i++) {
    const reply = await client.ask(message)
    if (reply.text !== expected) throw new Error(`unexpected reply ${JSON.stringify(reply.text)} to ${message}`)
    samples.push(reply.ms)
  }
  return latencySummary(samples, performance.now() - start)
}

const withAgent = async (work, name, clawArg, use) => {
  const runDir = path.join(work.dir, `${name}-run`)
  const agent = startAgentProcess({
    args: ["--bridge", "none", "--brain", nodeExecutable(work.dir, "brain", "brain.mjs"), "--claw", clawArg],
    runDir,
    memoryDir: path.join(work.dir, `${name}-memory`),
    cwd: work.dir,
    env: { CLAWS_DIR: clawsDir }
  })
  try {
    await agent.fifosReady()
    const client = interactClient(fifoPaths(runDir))
    try {
      return await use(client)
    } finally {
      client.close()
    }
  } catch (error) {
    throw new Error(`${error.message}\nplanckclaw stderr:\n${agent.stderr()}`)
  } finally {
    await agent.stop()
  }
}

const log = (name, s) => progress(`${name}: p50 ${s.p50} ms, p99 ${s.p99} ms, ${s.msgsPerSec} msg/s (n=${s.n})`)

main(async () => {
  const work = makeWorkDir("turn-fifo")
  try {
    const shipped = await withAgent(work, "shipped", "scripts", async (client) => {
      const plain = await closedLoop(client, { message: "What should I remember about this run?", expected: REPLY, warmup: 300, iterations: ITERATIONS })
      log("fifo plain", plain)
      const tool = await closedLoop(client, { message: `${TOOL_PREFIX} what time is it?`, expected: TOOL_REPLY, warmup: 30, iterations: Math.round(ITERATIONS / 8) })
      log("fifo tool round (claws/time.sh)", tool)
      return { plain, tool }
    })
    const instant = await withAgent(work, "instant", nodeExecutable(work.dir, "claw", "claw.mjs"), async (client) => {
      const tool = await closedLoop(client, { message: `${TOOL_PREFIX} what time is it?`, expected: TOOL_REPLY, warmup: 200, iterations: Math.round(ITERATIONS / 2) })
      log("fifo tool round (instant external claw)", tool)
      return { tool }
    })
    return {
      metrics: {
        turn_p50_ms_fifo: shipped.plain.p50,
        turn_p99_ms_fifo: shipped.plain.p99,
        turn_msgs_per_s_fifo: shipped.plain.msgsPerSec,
        turn_tool_p50_ms_fifo: shipped.tool.p50,
        turn_tool_p99_ms_fifo: shipped.tool.p99,
        turn_tool_p50_ms_fifo_instant_claw: instant.tool.p50,
        turn_tool_p99_ms_fifo_instant_claw: instant.tool.p99
      },
      detail: { plain: shipped.plain, toolShippedClaw: shipped.tool, toolInstantClaw: instant.tool }
    }
  } finally {
    work.remove()
  }
})
