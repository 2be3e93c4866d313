/**
 * 1a. Turn overhead in memory: the real agent (Agent.layerWithMemory +
 * Intake.run from dist/) over the in-memory Interact, a brain that answers
 * at once, and a real memory directory, with shipped settings (HISTORY_MAX
 * 200, HISTORY_KEEP 40) and a history seeded with 40 lines: every turn sends
 * a full tail, and every 80th is followed by a compaction (which the next
 * message waits for), as in steady use.
 *
 * - plain: the shipped claws through the real ScriptClaws discovery, no call.
 * - tool round, in-process claw: the brain asks for get_time once, served
 *   by an in-memory claw: the agent's own cost of a round.
 * - tool round, shipped claw: the same served by claws/time.sh, a fork/exec
 *   of sh and date each time.
 *
 * The three agents run side by side, in batches, so load on the machine
 * weighs on each alike.
 */
import * as path from "node:path"
import * as A from "./lib/agent.mjs"
import { effect } from "./lib/build.mjs"
import { main, progress } from "./lib/child.mjs"
import { latencySummary, round } from "./lib/stats.mjs"
import { clawsDir, makeWorkDir } from "./lib/work.mjs"

const { Effect } = effect

const ITERATIONS = Number(process.env.BENCH_TURNS ?? 2000)

const start = (work, name, brain, claws) =>
  A.startAgent({
    memoryDir: A.prepareMemory(path.join(work.dir, name), A.seedHistory(20)),
    brain,
    claws,
    settings: { CLAWS_DIR: clawsDir }
  })

main(async () => {
  const work = makeWorkDir("turn-memory")
  try {
    const [plain, inProcessTool, shellTool] = await Effect.runPromise(
      Effect.scoped(Effect.gen(function*() {
        const results = yield* A.measureInterleaved([
          {
            agent: yield* start(work, "plain", A.instantBrain, A.scriptClaws),
            message: "What should I remember about this run?",
            expected: A.REPLY,
            iterations: ITERATIONS,
            warmup: 300
          },
          {
            agent: yield* start(work, "tool-in-process", A.toolRoundBrain("get_time"), A.inProcessClaws),
            message: "What time is it?",
            expected: A.TOOL_REPLY,
            iterations: Math.round(ITERATIONS / 2),
            warmup: 200
          },
          {
            agent: yield* start(work, "tool-shipped-claw", A.toolRoundBrain("get_time"), A.scriptClaws),
            message: "What time is it?",
            expected: A.TOOL_REPLY,
            iterations: Math.round(ITERATIONS / 8),
            warmup: 20
          }
        ])
        return results.map(({ samples, wallMs }) => latencySummary(samples, wallMs))
      })).pipe(Effect.provide(A.logging))
    )
    const log = (name, s) => progress(`${name}: p50 ${s.p50} ms, p99 ${s.p99} ms, ${s.msgsPerSec} msg/s (n=${s.n})`)
    log("plain turn", plain)
    log("tool round, in-process claw", inProcessTool)
    log("tool round, claws/time.sh", shellTool)
    return {
      metrics: {
        turn_p50_ms_memory: plain.p50,
        turn_p99_ms_memory: plain.p99,
        turn_msgs_per_s_memory: plain.msgsPerSec,
        turn_tool_p50_ms_memory_in_process_claw: inProcessTool.p50,
        turn_tool_p99_ms_memory_in_process_claw: inProcessTool.p99,
        turn_tool_p50_ms_memory: shellTool.p50,
        turn_tool_p99_ms_memory: shellTool.p99
      },
      detail: { plain, inProcessTool, shellTool, toolRoundCostMs: round(inProcessTool.p50 - plain.p50, 4) }
    }
  } finally {
    work.remove()
  }
})
