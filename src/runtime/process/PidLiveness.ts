/**
 * Whether a pid named in a lock or pid file still stands for a live process,
 * and for the one that wrote the file (not a newcomer with a reused pid).
 */
import * as fs from "node:fs"
import * as Result from "effect/Result"
import { errnoCode } from "../Errors.js"

/** Whether a process with this pid exists (a live lock or pid-file owner). */
export const isAlive = (pid: number): boolean => {
  if (!Number.isInteger(pid) || pid <= 0) return false
  const probe = Result.try(() => process.kill(pid, 0))
  // EPERM means the process exists but belongs to someone else: still alive.
  return Result.isSuccess(probe) || errnoCode(probe.failure) === "EPERM"
}

// Clock ticks per second of /proc times (USER_HZ): 100 wherever Linux runs Node.
const userHz = 100
// A clock stepped back a little between a process's start and its write must
// not make its own lock look stale.
const clockSlackMillis = 10_000

/** When `pid` started, in ms since the epoch, from /proc; undefined where there is no /proc. */
const startedAtMillis = (pid: number): number | undefined => {
  const stat = Result.getOrUndefined(Result.try(() => fs.readFileSync(`/proc/${pid}/stat`, "utf8")))
  const boot = Result.getOrUndefined(Result.try(() => fs.readFileSync("/proc/stat", "utf8")))?.match(/^btime (\d+)$/m)?.[1]
  // Field 22 of stat, counted after the parenthesised command (which may hold spaces).
  const ticks = stat?.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
  if (boot === undefined || ticks === undefined) return undefined
  return Number(boot) * 1000 + (Number(ticks) * 1000) / userHz
}

/**
 * Whether `pid`, named in `file`, still holds it. A live process that started
 * after the file was written is not its writer but a newcomer with a reused
 * pid (after a reboot pids start over): the file is stale.
 */
export const heldBy = (pid: number, file: string): boolean => {
  if (!isAlive(pid)) return false
  const started = startedAtMillis(pid)
  const written = Result.getOrUndefined(Result.try(() => fs.lstatSync(file).mtimeMs))
  return started === undefined || written === undefined || started <= written + clockSlackMillis
}
