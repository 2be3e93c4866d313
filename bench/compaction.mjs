/**
 * 4. Compaction of a 1,000,000-line history.jsonl (about 100 MB) with a
 * brain that answers at once: wall time and peak resident memory of the
 * compacting process (bench/compaction-child.mjs, a fresh node process; its
 * peak is getrusage's maxrss, so it includes node and the loaded modules).
 * Checked: history keeps its last HISTORY_KEEP (40) lines, summary.md holds
 * the summary, every older line was summarised.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"
import * as A from "./lib/agent.mjs"
import { main, progress } from "./lib/child.mjs"
import { median, round } from "./lib/stats.mjs"
import { benchDir, makeWorkDir } from "./lib/work.mjs"

const LINES = 1_000_000
const RUNS = Number(process.env.BENCH_COMPACTION_RUNS ?? 3)
const run = promisify(execFile)

/** LINES history lines of chat length (user/assistant pairs), in 8 MiB writes. */
const writeHistory = (file) => {
  const fd = fs.openSync(file, "w")
  try {
    let buffer = ""
    for (let i = 0; i < LINES / 2; i++) {
      buffer += A.historyLine("user", `Message ${i}: please remember that compaction must stay small in memory.`)
      buffer += A.historyLine("assistant", `Reply ${i}: noted, the backlog is folded in chunks and streamed.`)
      if (buffer.length > 8 * 1024 * 1024) {
        fs.writeSync(fd, buffer)
        buffer = ""
      }
    }
    fs.writeSync(fd, buffer)
  } finally {
    fs.closeSync(fd)
  }
  return fs.statSync(file).size
}

const countLines = (file) => {
  const text = fs.readFileSync(file, "utf8")
  return text.split("\n").filter((line) => line !== "").length
}

main(async () => {
  const work = makeWorkDir("compaction")
  try {
    const results = []
    const template = path.join(work.dir, "history-1m.jsonl")
    const bytes = writeHistory(template)
    for (let i = 0; i < RUNS; i++) {
      const memoryDir = path.join(work.dir, `memory-${i}`)
      fs.mkdirSync(memoryDir)
      const history = path.join(memoryDir, "history.jsonl")
      fs.copyFileSync(template, history)
      const { stdout } = await run(process.execPath, [path.join(benchDir, "compaction-child.mjs"), memoryDir], {
        maxBuffer: 1024 * 1024
      })
      const result = JSON.parse(stdout.trim().split("\n").pop())
      const kept = countLines(history)
      const summary = fs.readFileSync(path.join(memoryDir, "summary.md"), "utf8")
      if (result.report === null || result.report.summarised !== LINES - 40 || kept !== 40 || summary.trim() === "") {
        throw new Error(`compaction did not do its job: ${JSON.stringify({ report: result.report, kept })}`)
      }
      progress(
        `compaction of ${LINES} lines (${round(bytes / 1024 / 1024, 1)} MiB): ${round(result.seconds, 3)} s, ` +
          `peak RSS ${round(result.peakRssMb, 1)} MiB (${round(result.rssBeforeMb, 1)} MiB before), ` +
          `${result.report.requests} brain requests`
      )
      results.push(result)
      fs.rmSync(memoryDir, { recursive: true, force: true })
    }
    return {
      metrics: {
        compaction_1m_s: round(median(results.map((r) => r.seconds)), 3),
        compaction_1m_peak_rss_mb: round(median(results.map((r) => r.peakRssMb)), 1),
        compaction_1m_rss_before_mb: round(median(results.map((r) => r.rssBeforeMb)), 1)
      },
      detail: { lines: LINES, bytes, runs: results }
    }
  } finally {
    work.remove()
  }
})
