/**
 * Cross-process locks on the memory directory, as files created with O_EXCL
 * holding the owner's pid (on a full disk, as symbolic links whose target is
 * the pid: they need no data block). A lock whose owner is dead (a killed
 * run) is stale and taken over. Node has no flock(2); this is the portable
 * equivalent.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { errnoCode } from "../runtime/Errors.js"
import { readPidFileSync } from "../runtime/process/PidFile.js"
import * as Takeover from "../runtime/process/Takeover.js"

export class LockHeld extends Data.TaggedError("LockHeld")<{
  readonly path: string
  readonly ownerPid: number
}> {}

export class LockFailed extends Data.TaggedError("LockFailed")<{
  readonly path: string
  /** The errno code, when the system refused (ENOSPC on a full disk). */
  readonly code: string | undefined
  readonly message: string
}> {}

/**
 * The pid in a lock: a file's content, or the target of a lock taken on a
 * full disk (a link). NaN when there is none yet: an empty file is a lock
 * being written, which `tryTakeSync` treats as held for its first second.
 */
const readOwner = (path: string): number => readPidFileSync(path) ?? Number.NaN

/** The pid a lock names; NaN when none can be read (absent, or being written). */
export const ownerOf = readOwner

/**
 * The locks this process holds now, by absolute path. A lock naming this
 * process's pid is stale only when it is not among them (an earlier process
 * had the same pid); one of them is held, by another fiber or another store
 * on the same directory, and is waited for or refused like another process's.
 * Process-wide by nature: a lock names the pid, so what this pid holds is known to every scope of it.
 */
const heldHere = new Set<string>()

/** A lock just taken; `clean` when no lock file was there before (none was taken over from a dead owner). */
export interface Taken {
  readonly clean: boolean
}

export interface TakeOptions {
  /**
   * Take the lock as a symbolic link whose target is the pid: one
   * symlink(2), atomic like O_EXCL, and never seen empty (a file lock is
   * created, then written), instead of open, write and close. Falls back to
   * a file where links are not supported.
   */
  readonly link?: boolean
  /**
   * This process's owner file on the lock's file system (OwnerFile.ts): the
   * lock is then a hard link to it, one link(2) allocating no inode. Falls
   * back to `link` (or a file) where that link cannot be made: another file
   * system, an owner file with too many links or removed.
   */
  readonly ownerFile?: string | undefined
  /** The present, in ms since the epoch (Effect's Clock in `hold`): a lock being written is judged by its age. */
  readonly now?: number
}

/** A lock file holding our pid (Takeover.createPidFileSync), its failure named for the lock. */
const createFile = (path: string): Result.Result<void, LockFailed | "exists"> =>
  Result.mapError(Takeover.createPidFileSync(path), (failure) => failure === "exists" ? failure : new LockFailed({ path, ...failure }))

const create = (path: string, options: TakeOptions | undefined): Result.Result<void, LockFailed | "exists"> => {
  const ownerFile = options?.ownerFile
  if (ownerFile !== undefined) {
    const linked = Result.try(() => fs.linkSync(ownerFile, path))
    if (Result.isSuccess(linked)) return Result.succeed(undefined)
    if (errnoCode(linked.failure) === "EEXIST") return Result.fail("exists")
  }
  if (options?.link === true) {
    const linked = Result.try(() => fs.symlinkSync(String(process.pid), path))
    if (Result.isSuccess(linked)) return Result.succeed(undefined)
    if (errnoCode(linked.failure) === "EEXIST") return Result.fail("exists")
  }
  return createFile(path)
}

/** Why a lock that exists is not stale: held (by whom; NaN while being written), or undefined when it may be taken over. */
const heldNow = (path: string, now: number | undefined): LockHeld | undefined => {
  const { held, pid } = Takeover.judge(path, heldHere, now)
  return held ? new LockHeld({ path, ownerPid: pid ?? Number.NaN }) : undefined
}

/**
 * Removes a stale lock, one process at a time (Takeover): the lock is judged
 * again under `<lock>.takeover`. While another process is taking over, the
 * lock reads as being written (a wait, then its new owner).
 */
const removeStale = (path: string, now: number | undefined): LockHeld | LockFailed | undefined => {
  const entry = Takeover.enterSync(path, now)
  switch (entry._tag) {
    case "Failed":
      return new LockFailed({ path: entry.guard, ...entry.failure })
    case "Busy":
      return new LockHeld({ path, ownerPid: Number.NaN })
    case "Cleared":
      return undefined
    case "Entered": {
      const held = heldNow(path, now)
      if (held === undefined) Result.try(() => fs.unlinkSync(path))
      Takeover.leaveSync(entry.guard)
      return held
    }
  }
}

/** One attempt: take the lock, or say who holds it. Synchronous. */
export const tryTakeSync = (path: string, options?: TakeOptions): Result.Result<Taken, LockHeld | LockFailed> => {
  for (let attempt = 0; attempt < 3; attempt++) {
    const created = create(path, options)
    if (Result.isSuccess(created)) {
      heldHere.add(nodePath.resolve(path))
      return Result.succeed({ clean: attempt === 0 })
    }
    if (created.failure !== "exists") return Result.fail(created.failure)
    const held = heldNow(path, options?.now) ?? removeStale(path, options?.now)
    if (held !== undefined) return Result.fail(held)
  }
  return Result.fail(new LockFailed({ path, code: undefined, message: "lock file keeps reappearing" }))
}

const tryTake = (path: string, options?: TakeOptions): Effect.Effect<void, LockHeld | LockFailed> =>
  Effect.asVoid(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fromResult(tryTakeSync(path, { ...options, now }))))

/** A lock naming no pid yet: asked again until it is old enough to be a killed creator's, then taken over. */
const beingWritten = (error: LockHeld | LockFailed) => error._tag === "LockHeld" && Number.isNaN(error.ownerPid)
const untilWritten = Schedule.spaced(Duration.millis(50)).pipe(
  Schedule.upTo({ duration: Duration.millis(Takeover.BEING_WRITTEN_MS + 200) })
)

/**
 * Releases a lock this process holds. Synchronous. The owner is read back
 * first, so a lock taken over meanwhile (this process looked dead to
 * another) is not removed; `sameStep` skips that read for a lock taken in
 * the same synchronous step, which nobody can have taken over: a live
 * owner's lock is never stale, and no other fiber ran in between.
 */
export const releaseSync = (path: string, sameStep = false): void => {
  heldHere.delete(nodePath.resolve(path))
  if (sameStep || readOwner(path) === process.pid) Result.try(() => fs.unlinkSync(path))
}

const release = (path: string) => Effect.sync(() => releaseSync(path))

/**
 * Takes the lock for the scope, or fails at once if a live process holds
 * it. An empty lock file (its creator between creating and writing it, or
 * killed there) is waited on for up to a second, then taken over.
 * `options`: how it is taken (as a link, see TakeOptions).
 */
export const hold = (path: string, options?: TakeOptions): Effect.Effect<void, LockHeld | LockFailed, Scope.Scope> =>
  Effect.acquireRelease(tryTake(path, options).pipe(Effect.retry({ schedule: untilWritten, while: beingWritten })), () => release(path))

/**
 * Takes the lock for the scope, waiting while another process holds it.
 * Used for short critical sections (an append, a compaction commit).
 */
export const holdWaiting = (
  path: string,
  patience: Duration.Input = Duration.seconds(30)
): Effect.Effect<void, LockHeld | LockFailed, Scope.Scope> =>
  Effect.acquireRelease(
    tryTake(path).pipe(
      Effect.retry({
        schedule: Schedule.spaced(Duration.millis(5)).pipe(Schedule.upTo({ duration: patience })),
        while: (error) => error._tag === "LockHeld"
      })
    ),
    () => release(path)
  )
