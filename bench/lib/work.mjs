/**
 * The scratch directory of a bench run: bench/.work/<pid>/ (git-ignored),
 * removed when the run ends, so no fixture is ever left behind or committed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export const benchDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
/** The checkout this bench is in: its fixtures (memory/soul.md for the do-nothing agent). */
export const repoDir = path.dirname(benchDir)
/**
 * The build measured: the checkout named by PLANCKCLAW_BENCH_REPO (its
 * dist/, bin/, claws/ and node_modules/, e.g. another commit's worktree, see
 * bench/compare.mjs), or else this one. Only where the build comes from
 * changes: every measurement stays this bench's.
 */
export const buildDir = path.resolve(process.env.PLANCKCLAW_BENCH_REPO || repoDir)
export const distDir = path.join(buildDir, "dist")
export const clawsDir = path.join(buildDir, "claws")
export const binPath = path.join(buildDir, "bin", "planckclaw")

/**
 * Where a build measured against this one (an older commit's checkout, see
 * compare.mjs) kept the dist/ modules the bench loads, before src/ was laid
 * out in folders by role.
 */
const formerPlaces = {
  "agent/Agent.js": "Agent.js",
  "agent/Compactor.js": "memory/Compactor.js",
  "agent/Intake.js": "Intake.js",
  "agent/Prompt.js": "Prompt.js",
  "cli/bin.js": "bin.js",
  "hosts/serve/AgentHost.js": "service/AgentHost.js",
  "hosts/serve/HttpApi.js": "service/HttpApi.js",
  "memory/MemoryHold.js": "MemoryHold.js",
  "pipes/FifoClaws.js": "claws/FifoClaws.js",
  "pipes/ServeClaws.js": "fifo/ServeClaws.js",
  "ports/Brain.js": "Brain.js",
  "runtime/Logging.js": "Logging.js",
  "runtime/process/EarlyTierUp.js": "process/EarlyTierUp.js",
  "runtime/process/Pretenuring.js": "process/Pretenuring.js"
}

/** The path of `file` (as this layout names it) in the build output `dist`, or where an older build has it. */
export const distFile = (dist, file) => {
  const here = path.join(dist, file)
  const before = formerPlaces[file]
  return before === undefined || fs.existsSync(here) ? here : path.join(dist, before)
}

/**
 * Set by bench/run.mjs and compare.mjs for the measurements they run: a
 * finished work directory is moved into bench/.work/.spent rather than
 * deleted, and they delete them all after the last measurement. On ext4
 * without a journal (the disk of this bench's VMs) the inode allocator
 * skips every inode freed in the last minute (six while its inode-table
 * block is not written back), so deleting the tens of thousands of files
 * one measurement made left each file made in the next minutes several
 * times dearer: the next measurement timed the bench's clean-up (see
 * docs/performance.md, "Why file creation varied").
 */
const DEFER_REMOVAL = "PLANCKCLAW_BENCH_DEFER_REMOVAL"
const workRoot = path.join(benchDir, ".work")
const spentDir = path.join(workRoot, ".spent")

/** A fresh directory under bench/.work for one measurement; `remove` deletes it, or moves it aside in a whole run. */
export const makeWorkDir = (name) => {
  fs.mkdirSync(workRoot, { recursive: true })
  const dir = fs.mkdtempSync(path.join(workRoot, `${name}-`))
  const remove = () => {
    if (process.env[DEFER_REMOVAL] !== "1") return fs.rmSync(dir, { recursive: true, force: true })
    fs.mkdirSync(spentDir, { recursive: true })
    fs.renameSync(dir, path.join(spentDir, path.basename(dir)))
  }
  return { dir, remove }
}

/**
 * For a runner of several measurements (run.mjs, compare.mjs): has them
 * move their work directories aside, and gives the clean-up to call after
 * the last one (it deletes them, then bench/.work once it is empty).
 */
export const deferWorkRemoval = () => {
  process.env[DEFER_REMOVAL] = "1"
  return () => {
    fs.rmSync(spentDir, { recursive: true, force: true })
    if (fs.existsSync(workRoot) && fs.readdirSync(workRoot).length === 0) fs.rmdirSync(workRoot)
  }
}

/** Bytes free for an unprivileged user on the filesystem holding `dir`. */
export const freeBytes = (dir) => {
  const stat = fs.statfsSync(dir)
  return stat.bavail * stat.bsize
}

/**
 * An executable wrapper that runs one of the bench's node scripts, written
 * at run time so a checkout that lost the execute bit still works.
 */
export const nodeExecutable = (dir, name, script) => {
  const file = path.join(dir, name)
  fs.writeFileSync(file, `#!/bin/sh\nexec "${process.execPath}" "${path.join(benchDir, script)}" "$@"\n`, { mode: 0o755 })
  return file
}

/** Resident memory of a process, from /proc (MiB); VmHWM is its peak. */
export const procMemoryMb = (pid) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const field = (name) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)
    return match === null ? Number.NaN : Number(match[1]) / 1024
  }
  return { rss: field("VmRSS"), hwm: field("VmHWM") }
}

/** Whether this process may be measured: `/proc` is Linux only. */
export const hasProc = fs.existsSync("/proc/self/status")
