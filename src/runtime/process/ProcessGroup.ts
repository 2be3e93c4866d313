/**
 * Signals to whole process groups and sessions: a claw or bridge and
 * everything it started.
 */
import * as Fs from "node:fs"
import * as Result from "effect/Result"

/** Signals the group led by `pgid`; a group that is already gone (ESRCH) is fine. */
export const signalGroup = (pgid: number, signal: NodeJS.Signals): void => {
  Result.try(() => process.kill(-pgid, signal))
}

// A stat line is a few hundred bytes; the session is among its first fields.
const statBuffer = Buffer.alloc(1024)

/**
 * The process group and session ids of a live process, from /proc/PID/stat
 * (fields 5 and 6); undefined for a zombie, or one gone meanwhile. The fields
 * are counted from the last `)`: the command name before it may hold spaces
 * and parentheses. open/read/close with one buffer: readFileSync costs
 * several times more per file.
 */
const liveIdsOf = (pid: string): { readonly group: number; readonly session: number } | undefined => {
  const fd = Result.try(() => Fs.openSync(`/proc/${pid}/stat`, "r"))
  if (Result.isFailure(fd)) return undefined
  const read = Result.try(() => Fs.readSync(fd.success, statBuffer, 0, statBuffer.length, 0))
  Result.try(() => Fs.closeSync(fd.success))
  if (Result.isFailure(read)) return undefined
  const text = statBuffer.toString("latin1", 0, read.success)
  const [state, , group, session] = text.slice(text.lastIndexOf(")") + 2).split(" ", 4)
  return state === "Z" || state === "X" ? undefined : { group: Number(group), session: Number(session) }
}

/**
 * The live processes of session `sid` outside its group `sid`, which
 * signalGroup reaches (its members killed a moment before still show as
 * live: counted, they made every scan take a second pass); none where there
 * is no /proc.
 */
const sessionMembers = (sid: number): Array<number> => {
  const entries = Result.getOrElse(Result.try(() => Fs.readdirSync("/proc")), (): Array<string> => [])
  const members: Array<number> = []
  for (const entry of entries) {
    const first = entry.charCodeAt(0)
    if (first < 48 || first > 57) continue
    const ids = liveIdsOf(entry)
    if (ids !== undefined && ids.session === sid && ids.group !== sid) members.push(Number(entry))
  }
  return members
}

/** Passes over /proc at most: each after the first finds only what a member forked during the one before. */
const maxPasses = 8

/**
 * Signals the group led by `sid` and every other process of the session
 * `sid` (one started with setsid: its pid is both ids). The group alone
 * misses whatever made a group of its own within the session: GNU
 * `timeout`, a shell with job control. Only a new session (`setsid`)
 * leaves. Costs a read of every process's stat file (about 10 µs each).
 */
export const signalSession = (sid: number, signal: NodeJS.Signals): void => {
  signalGroup(sid, signal)
  const signalled = new Set<number>()
  for (let pass = 0; pass < maxPasses; pass++) {
    const fresh = sessionMembers(sid).filter((pid) => !signalled.has(pid))
    if (fresh.length === 0) return
    for (const pid of fresh) {
      signalled.add(pid)
      Result.try(() => process.kill(pid, signal))
    }
  }
}
