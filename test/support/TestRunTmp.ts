/**
 * vitest's global setup: one temporary directory for the whole run. Every
 * test's os.tmpdir(), and that of every process a test starts with its
 * environment, is inside it, and it is removed when the run ends, so a run
 * leaves nothing in the machine's temporary directory, whatever a test did
 * not clean up itself. A run that was killed before its end leaves its
 * directory behind; the next run removes it (its owner's pid is gone).
 * The PostgreSQL template, a cache kept between runs, stays in the
 * machine's directory (MACHINE_TMP, see Postgres.ts).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Result from "effect/Result"

const PREFIX = "planckclaw-test-run-"
const OWNER_FILE = "owner.pid"

/** The machine's temporary directory, for what is kept between runs. */
export const MACHINE_TMP = "PLANCKCLAW_TEST_MACHINE_TMP"

/** Whether process `pid` runs (EPERM: it does, as someone else's). */
export const isAlive = (pid: number): boolean =>
  Number.isInteger(pid) && pid > 0 && Result.match(Result.try(() => process.kill(pid, 0)), {
    onSuccess: () => true,
    onFailure: (error) => (error as NodeJS.ErrnoException).code === "EPERM"
  })

const removeDeadRuns = (machineTmp: string) => {
  for (const name of fs.readdirSync(machineTmp)) {
    if (!name.startsWith(PREFIX)) continue
    const dir = path.join(machineTmp, name)
    let owner = 0
    try {
      owner = Number(fs.readFileSync(path.join(dir, OWNER_FILE), "utf8"))
    } catch {
      // Not ours to judge without an owner (being made, or not a run's): left alone.
      continue
    }
    if (!isAlive(owner)) fs.rmSync(dir, { recursive: true, force: true })
  }
}

export default function setup(): () => void {
  const machineTmp = process.env[MACHINE_TMP] ?? os.tmpdir()
  removeDeadRuns(machineTmp)
  const root = fs.mkdtempSync(path.join(machineTmp, PREFIX))
  fs.writeFileSync(path.join(root, OWNER_FILE), String(process.pid))
  // Others may pass through, as through /tmp (the throwaway PostgreSQL runs as its own user), not list it.
  fs.chmodSync(root, 0o711)
  const before = { TMPDIR: process.env.TMPDIR, [MACHINE_TMP]: process.env[MACHINE_TMP] }
  process.env[MACHINE_TMP] = machineTmp
  process.env.TMPDIR = root
  return () => {
    for (const [key, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
    fs.rmSync(root, { recursive: true, force: true })
  }
}
