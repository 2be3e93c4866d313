/**
 * 3. History tail: turn latency (in memory, as in 1a, shipped claws) with a
 * history.jsonl of 1 KB, 100 MB and 1 GB. HISTORY_MAX is set above the
 * line count so no compaction starts; everything else is as shipped.
 *
 * The three agents run side by side in this process and take turns in
 * batches of 25 messages, so a busy moment of the machine hits every size
 * alike; a size stops once it has used its time budget (at least 7
 * messages). The JIT is warmed on a small history first. The files are
 * generated here (whole lines, written in 8 MiB chunks), sit in the page
 * cache as a file in daily use would, and are deleted afterwards. A size is
 * skipped, with a note, when the disk lacks room for it plus 1 GiB.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as A from "./lib/agent.mjs"
import { effect } from "./lib/build.mjs"
import { main, progress } from "./lib/child.mjs"
import { latencySummary, round } from "./lib/stats.mjs"
import { clawsDir, freeBytes, makeWorkDir } from "./lib/work.mjs"

const { Effect } = effect

const KB = 1024
const MB = 1024 * KB
const GB = 1024 * MB
const SIZES = [
  { key: "1kb", bytes: KB },
  { key: "100mb", bytes: 100 * MB },
  { key: "1gb", bytes: GB }
]
const MARGIN = GB
const BATCH = 25
const MAX_TURNS = 1000
const MIN_TURNS = 7
const BUDGET_MS = Number(process.env.BENCH_HISTORY_BUDGET_MS ?? 6000)
const MESSAGE = "What should I remember about this run?"

/** Writes about `bytes` of history (whole user/assistant pairs); returns its size and line count. */
const writeHistory = (file, bytes) => {
  let pattern = ""
  let pairs = 0
  while (pattern.length < Math.min(bytes, 8 * MB)) {
    pattern += A.historyLine("user", `Message ${pairs}: please remember that the benchmark history is large.`)
    pattern += A.historyLine("assistant", `Reply ${pairs}: remembered; the agent reads only the tail of this file.`)
    pairs++
  }
  const chunk = Buffer.from(pattern)
  const fd = fs.openSync(file, "w")
  let written = 0
  let lines = 0
  try {
    while (written < bytes) {
      fs.writeSync(fd, chunk)
      written += chunk.length
      lines += pairs * 2
    }
  } finally {
    fs.closeSync(fd)
  }
  return { bytes: written, lines }
}

const measure = (work, sizes) =>
  Effect.scoped(Effect.gen(function*() {
    const warm = A.prepareMemory(path.join(work.dir, "memory-warmup"), A.seedHistory(20))
    const warmAgent = yield* A.startAgent({ memoryDir: warm, brain: A.instantBrain, claws: A.scriptClaws, settings: { CLAWS_DIR: clawsDir } })
    yield* A.measureTurns(warmAgent, { message: MESSAGE, expected: A.REPLY, warmup: 500, iterations: 1 })

    const runs = []
    for (const size of sizes) {
      const memoryDir = A.prepareMemory(path.join(work.dir, `memory-${size.key}`))
      const generated = writeHistory(path.join(memoryDir, "history.jsonl"), size.bytes)
      const agent = yield* A.startAgent({
        memoryDir,
        brain: A.instantBrain,
        claws: A.scriptClaws,
        settings: { CLAWS_DIR: clawsDir, HISTORY_MAX: String(generated.lines * 2 + 100_000) }
      })
      // The first turn of a run may pay one-time costs (opening, counting): not steady state.
      const first = yield* A.measureTurns(agent, { message: MESSAGE, expected: A.REPLY, warmup: 0, iterations: 1 })
      yield* A.measureTurns(agent, { message: MESSAGE, expected: A.REPLY, warmup: 2, iterations: 1 })
      runs.push({ size, generated, agent, samples: [], spentMs: 0, firstMs: first.samples[0] })
    }
    let active = runs
    while (active.length > 0) {
      for (const run of active) {
        const batch = yield* A.measureTurns(run.agent, { message: MESSAGE, expected: A.REPLY, warmup: 0, iterations: BATCH, minIterations: 1, budgetMs: BUDGET_MS - run.spentMs })
        run.samples.push(...batch.samples)
        run.spentMs += batch.wallMs
      }
      active = active.filter((run) => run.samples.length < MAX_TURNS && !(run.spentMs >= BUDGET_MS && run.samples.length >= MIN_TURNS))
    }
    return runs.map((run) => ({ ...run, summary: latencySummary(run.samples, run.spentMs) }))
  })).pipe(Effect.provide(A.logging))

main(async () => {
  const work = makeWorkDir("history")
  const metrics = {}
  const notes = []
  const detail = {}
  try {
    let room = freeBytes(work.dir) - MARGIN
    const sizes = SIZES.filter((size) => {
      if (room >= size.bytes) {
        room -= size.bytes
        return true
      }
      const note = `history ${size.key}: skipped, not enough free disk on ${work.dir} for it plus 1 GiB`
      progress(note)
      notes.push(note)
      metrics[`history_p50_ms_${size.key}`] = null
      return false
    })
    const runs = await Effect.runPromise(measure(work, sizes))
    for (const run of runs) {
      const { summary } = run
      progress(
        `history ${run.size.key} (${run.generated.lines} lines): p50 ${summary.p50} ms, p99 ${summary.p99} ms (n=${summary.n}); ` +
          `first turn ${round(run.firstMs, 2)} ms`
      )
      metrics[`history_p50_ms_${run.size.key}`] = summary.p50
      metrics[`history_first_turn_ms_${run.size.key}`] = round(run.firstMs, 3)
      detail[run.size.key] = { ...summary, bytes: run.generated.bytes, lines: run.generated.lines }
    }
    if (typeof metrics.history_p50_ms_1gb === "number" && typeof metrics.history_p50_ms_1kb === "number") {
      metrics.history_1gb_over_1kb = round(metrics.history_p50_ms_1gb / metrics.history_p50_ms_1kb, 3)
    }
    return { metrics, notes, detail }
  } finally {
    work.remove()
  }
})
