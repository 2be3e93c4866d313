/**
 * The machine a run was made on, and how busy the rest of it was: what
 * run.mjs and compare.mjs write beside their figures.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import { hasProc } from "./work.mjs"

/** The short commit of the checkout `dir` (with `+changes` when its tracked files differ from it), or null. */
export const commitOf = (dir) => {
  try {
    const git = (args) => execFileSync("git", args, { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
    const commit = git(["rev-parse", "--short", "HEAD"])
    return git(["status", "--porcelain", "--untracked-files=no"]) === "" ? commit : `${commit}+changes`
  } catch {
    return null
  }
}

/** CPU, cores, memory, OS, Node, the commit of `dir`, the date. */
export const machine = (dir) => {
  const cpus = os.cpus()
  return {
    cpu: cpus[0]?.model.trim() ?? "unknown",
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 1024 ** 3),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    commit: commitOf(dir),
    date: new Date().toISOString()
  }
}

/** All cores' jiffies from /proc/stat: busy and total. */
const cpuJiffies = () => {
  const fields = fs.readFileSync("/proc/stat", "utf8").split("\n", 1)[0].trim().split(/\s+/).slice(1).map(Number)
  const total = fields.reduce((sum, value) => sum + value, 0)
  const idle = fields[3] + (fields[4] ?? 0) // idle + iowait
  return { busy: total - idle, total }
}

/**
 * Cores in use by the rest of the machine over one second, this process
 * waiting meanwhile. The 1-minute load average still counts a build that has
 * just ended (`npm run bench` builds first), so it cannot say whether the
 * machine is busy now.
 */
export const coresBusyNow = async () => {
  if (!hasProc) return undefined
  const before = cpuJiffies()
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const after = cpuJiffies()
  const total = after.total - before.total
  return total > 0 ? Math.round(((after.busy - before.busy) / total) * os.cpus().length * 100) / 100 : undefined
}
