/** Counting system calls with `strace -c` (bench/syscalls.mjs, bench/serve-syscalls.mjs). */
import { execFileSync } from "node:child_process"
import { round } from "./stats.mjs"

export const hasStrace = () => {
  try {
    execFileSync("strace", ["-V"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/** strace -c -U calls,errors,name output: { name: { calls, errors } }. */
export const parseStraceSummary = (text) => {
  const counts = {}
  for (const line of text.split("\n")) {
    const match = /^\s*(\d+)\s+(\d+)?\s+(\w+)\s*$/.exec(line)
    if (match === null || match[3] === "total") continue
    counts[match[3]] = { calls: Number(match[1]), errors: Number(match[2] ?? 0) }
  }
  return counts
}

/** Calls and failing calls per turn (the difference of two runs over `turns`), by system call, most first. */
export const perTurn = (withTurns, baseline, turns) => {
  const names = new Set([...Object.keys(withTurns), ...Object.keys(baseline)])
  const rows = []
  for (const name of names) {
    const calls = ((withTurns[name]?.calls ?? 0) - (baseline[name]?.calls ?? 0)) / turns
    const errors = ((withTurns[name]?.errors ?? 0) - (baseline[name]?.errors ?? 0)) / turns
    if (Math.abs(calls) >= 0.005) rows.push({ name, calls: round(calls, 2), errors: round(errors, 2) })
  }
  rows.sort((a, b) => b.calls - a.calls)
  const total = round(rows.reduce((sum, row) => sum + row.calls, 0), 1)
  return { total, byCall: rows }
}
