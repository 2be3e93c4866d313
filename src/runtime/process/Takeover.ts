/**
 * Files claimed by a pid (a memory lock, a run's pid file, a bridge's
 * claim): created with O_EXCL holding the pid, and replaced once their
 * holder is dead. The replacing is done one process at a time: two that
 * both found the holder dead would otherwise race, the later one's unlink
 * removing the file the earlier had just made, and both would hold it.
 * Whoever judges and removes a stale file holds `<file>.takeover` (made
 * like the file itself) meanwhile, and judges the file again under it. A
 * guard left by a killed taker is judged as a claim (stale once its pid is
 * dead, or once it is empty and older than a second) and removed the same
 * way, under its own guard `<file>.takeover.takeover`: two takers that both
 * found it stale would otherwise race just as over the file.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as Result from "effect/Result"
import { describeError, errnoCode } from "../Errors.js"
import { readPidFileSync } from "./PidFile.js"
import { heldBy } from "./PidLiveness.js"

/** How long an empty claim file counts as being written by its creator, not left by one killed while writing it. */
export const BEING_WRITTEN_MS = 1000

/** Errors of a disk with no room for the pid: a link still fits, its target lives in the inode. */
const noRoom = new Set(["ENOSPC", "EDQUOT", "EFBIG"])

export interface CreateFailed {
  /** The errno code, when the system refused (ENOSPC on a full disk). */
  readonly code: string | undefined
  readonly message: string
}

/**
 * Creates `path` with O_EXCL holding this process's pid; "exists" when it
 * is there already. On a disk too full for the pid, a symbolic link whose
 * target is the pid (readPidFileSync reads both).
 */
export const createPidFileSync = (path: string): Result.Result<void, CreateFailed | "exists"> => {
  const created = Result.try(() => fs.openSync(path, "wx", 0o600))
  if (Result.isFailure(created)) {
    const code = errnoCode(created.failure)
    return code === "EEXIST" ? Result.fail("exists") : Result.fail({ code, message: describeError(created.failure) })
  }
  const fd = created.success
  const content = Buffer.from(`${process.pid}\n`)
  const written = Result.try(() => fs.writeSync(fd, content))
  Result.try(() => fs.closeSync(fd))
  if (Result.isSuccess(written) && written.success === content.length) return Result.succeed(undefined)
  // A full disk: an empty file would look "being written" to others for a second; remove it.
  Result.try(() => fs.unlinkSync(path))
  const cause = Result.isFailure(written) ? written.failure : undefined
  const code = cause === undefined ? "ENOSPC" : errnoCode(cause) ?? "ENOSPC"
  if (noRoom.has(code)) {
    // Taking it must not need free space: the pid as a symbolic link's target does not.
    const linked = Result.try(() => fs.symlinkSync(String(process.pid), path))
    if (Result.isSuccess(linked)) return Result.succeed(undefined)
    if (errnoCode(linked.failure) === "EEXIST") return Result.fail("exists")
  }
  return Result.fail({ code, message: cause === undefined ? "the file was written short" : describeError(cause) })
}

/** Whether an empty (or unreadable) claim file is young enough to be its creator's, between creating and writing it. */
const beingWritten = (path: string, now: number | undefined): boolean => {
  const stat = Result.try(() => fs.lstatSync(path))
  return Result.isSuccess(stat) && (now ?? Date.now()) - stat.success.mtimeMs < BEING_WRITTEN_MS
}

const guardOf = (file: string): string => `${file}.takeover`

/**
 * The guards this process holds, by absolute path: one naming this pid is
 * another fiber's while in here, and an earlier process's (same pid) otherwise.
 * Process-wide by nature: a guard names the pid.
 */
const entered = new Set<string>()

/** What an attempt to take `<file>.takeover` found. */
export type Entry =
  /** Taken: judge the file, then `leaveSync(guard)`. */
  | { readonly _tag: "Entered"; readonly guard: string }
  /** Another live process (its pid; undefined while its guard is being written) is taking it over now. */
  | { readonly _tag: "Busy"; readonly guard: string; readonly takerPid: number | undefined }
  /** A guard left by a killed taker was removed: ask again. */
  | { readonly _tag: "Cleared"; readonly guard: string }
  | { readonly _tag: "Failed"; readonly guard: string; readonly failure: CreateFailed }

/**
 * How many guards of guards deep a stale one is still removed: each level
 * is left only by a taker killed inside the one below, so a few suffice.
 */
const MAX_DEPTH = 4

/** Whether a pid file (a lock, a guard) is held, and the pid it names: undefined when none can be read. */
export interface Judgement {
  readonly held: boolean
  readonly pid: number | undefined
}

/**
 * Whether the pid file at `file` is held, or stale and may be replaced. Held:
 * by the live process that wrote it; naming this process, only while
 * `heldHere` (absolute paths) has it, since an earlier process with the same
 * pid left it otherwise (containers reuse low pids); naming none, while young
 * enough to be its creator's between creating and writing it.
 */
export const judge = (file: string, heldHere: ReadonlySet<string>, now: number | undefined): Judgement => {
  const pid = readPidFileSync(file)
  const live = pid === process.pid ? heldHere.has(nodePath.resolve(file)) : pid !== undefined && heldBy(pid, file)
  return { held: live || (pid === undefined && beingWritten(file, now)), pid }
}

const enterAt = (file: string, now: number | undefined, depth: number): Entry => {
  const guard = guardOf(file)
  const created = createPidFileSync(guard)
  if (Result.isSuccess(created)) {
    entered.add(nodePath.resolve(guard))
    return { _tag: "Entered", guard }
  }
  if (created.failure !== "exists") return { _tag: "Failed", guard, failure: created.failure }
  const { held, pid } = judge(guard, entered, now)
  if (held) return { _tag: "Busy", guard, takerPid: pid }
  return removeStaleGuard(guard, now, depth + 1)
}

/**
 * Removes the stale `guard` under its own guard, where it is judged again:
 * another taker that found it stale too may have removed it and made its
 * own meanwhile, which must stay.
 */
const removeStaleGuard = (guard: string, now: number | undefined, depth: number): Entry => {
  if (depth > MAX_DEPTH) {
    const message = `takeover guards left by killed takers are nested more than ${MAX_DEPTH} deep; remove ${guard} and its .takeover files`
    return { _tag: "Failed", guard, failure: { code: undefined, message } }
  }
  const outer = enterClearing(guard, now, depth)
  switch (outer._tag) {
    case "Failed":
      return outer
    case "Busy":
    case "Cleared":
      // Another taker is removing it now.
      return { _tag: "Busy", guard, takerPid: outer._tag === "Busy" ? outer.takerPid : undefined }
    case "Entered": {
      const { held, pid } = judge(guard, entered, now)
      if (!held) Result.try(() => fs.unlinkSync(guard))
      leaveSync(outer.guard)
      return held ? { _tag: "Busy", guard, takerPid: pid } : { _tag: "Cleared", guard }
    }
  }
}

/** `enterAt`, asked again at once (a few times) after removing a killed taker's guard. */
const enterClearing = (file: string, now: number | undefined, depth: number): Entry => {
  let entry = enterAt(file, now, depth)
  for (let cleared = 0; entry._tag === "Cleared" && cleared < 3; cleared++) entry = enterAt(file, now, depth)
  return entry
}

/** One attempt at the guard of `file`. `now`: the present in ms since the epoch (Effect's Clock where there is one). */
export const enterSync = (file: string, now?: number): Entry => enterAt(file, now, 0)

/** `enterSync`, asked again at once after removing a killed taker's guard: Cleared only if guards keep being left. */
export const enterClearingSync = (file: string, now?: number): Entry => enterClearing(file, now, 0)

/** Gives the guard up (after judging, and replacing, the file). */
export const leaveSync = (guard: string): void => {
  entered.delete(nodePath.resolve(guard))
  Result.try(() => fs.unlinkSync(guard))
}
