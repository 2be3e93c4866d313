/**
 * The memory directory as every store on it shares it: its files, its one
 * write lock, its one-compaction-at-a-time mutex, and whether storing is
 * failing (a full disk). The history store (Memory) and the compaction's
 * fold store (FoldStore) are built on the same MemoryDir, so a turn's append
 * and a compaction's commit in one process take turns before the file lock:
 * file locks identify owners by pid, and cannot tell two fibers apart.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describeError, errnoCode } from "../Errors.js"
import * as FileLock from "./FileLock.js"
import { type AloneOutcome, heldByRun } from "./RunHeld.js"
import * as Layout from "./Layout.js"
import * as SafeFile from "./SafeFile.js"

export type { AloneOutcome } from "./RunHeld.js"

export class MemoryError extends Data.TaggedError("MemoryError")<{
  /**
   * `unwritable`: the directory cannot be written, or a memory file may not
   * be used (a link, not a regular file, someone else's); `locked`: the
   * write lock stayed held or could not be made; `replaced`: history was
   * replaced or shortened under a compaction; `io`: any other failure.
   */
  readonly reason: "unwritable" | "locked" | "io" | "replaced"
  readonly message: string
  readonly cause?: unknown
  /** Already logged (a store failure is logged once, not once per turn). */
  readonly reported?: boolean
}> {}

/** Another compaction holds the memory directory. */
export class CompactionBusy extends Data.TaggedError("CompactionBusy")<{
  readonly ownerPid: number
}> {}

export const MemoryConfig = Config.string("PLANCKCLAW_DIR").pipe(
  Config.withDefault("./memory"),
  Config.map((dir) => path.resolve(dir))
)

/** Runs a synchronous file operation; a throw is a MemoryError naming `what`. */
export const fsEffect = <A>(
  what: string,
  run: () => Either.Either<A, MemoryError>,
  reason: MemoryError["reason"] = "io"
): Effect.Effect<A, MemoryError> =>
  Effect.flatten(
    Effect.try({ try: run, catch: (cause) => new MemoryError({ reason, message: `${what}: ${describeError(cause)}`, cause }) })
  )

export const fromFileError = (error: SafeFile.MemoryFileError) =>
  new MemoryError({ reason: error._tag === "MemoryFileRefused" ? "unwritable" : "io", message: error.message, cause: error })

/** Runs `use` on the open history file; a missing file is `absent`. */
export const withHistory = <A>(
  file: string,
  how: number,
  absent: A,
  use: (fd: number) => Either.Either<A, MemoryError>
): Either.Either<A, MemoryError> => {
  const result = SafeFile.withFile(file, how, use)
  if (Either.isRight(result)) return Either.right(result.right)
  const error = result.left
  if (error._tag === "MemoryFileFailed" && error.code === "ENOENT") return Either.right(absent)
  return Either.left(error._tag === "MemoryError" ? error : fromFileError(error))
}

export interface MemoryDir {
  readonly directory: string
  readonly paths: Layout.Paths
  /**
   * For a run holding its run lock, the only process that appends: runs
   * `fast` without the write lock file, then checks (one access(2)) that no
   * other process started a compaction meanwhile; if one did, runs `redo`
   * under the lock, which must make the append exactly once (the ledger
   * tells whether it landed). When `fast` declines (Locked), or in any other
   * case (a serve agent, the first section of a process, after a failed
   * one): `slow` under the lock. Absent on a directory that is no
   * directory (SqlMemory's guard): then every append is locked.
   */
  readonly appendAlone?: <A>(
    what: string,
    fast: () => Either.Either<AloneOutcome<A>, MemoryError>,
    slow: () => Either.Either<A, MemoryError>,
    redo: () => Either.Either<A, MemoryError>
  ) => Effect.Effect<A, MemoryError>
  /** Told by this process's compaction when it holds (true) or released (false) the compaction lock file. */
  readonly compacting?: (held: boolean) => void
  /**
   * Runs `run` under the write lock (after finishing any interrupted
   * commit). A lock that cannot be created (a full disk) fails, or, for a
   * reader, runs `unlocked` instead.
   */
  readonly locked: <A>(
    what: string,
    run: () => Either.Either<A, MemoryError>,
    unlocked?: () => Either.Either<A, MemoryError>
  ) => Effect.Effect<A, MemoryError>
  /**
   * `locked` for a section that waits on the file system's thread pool (a
   * compaction's commit: its fsyncs must not hold the event loop): the same
   * lock and recovery, held across the waits; uninterruptible, so the lock
   * is never released under an operation still running.
   */
  readonly lockedAsync: <A>(what: string, run: Effect.Effect<A, MemoryError>) => Effect.Effect<A, MemoryError>
  /** One compaction at a time in this process, before the compaction lock file. */
  readonly compactionMutex: Effect.Semaphore
  /** Whether the last write to memory failed (a full disk). */
  readonly storageFailing: Effect.Effect<boolean>
  /** A write failure is logged once, with the free space, until a write succeeds again. */
  readonly storeFailed: (error: MemoryError) => Effect.Effect<never, MemoryError>
  readonly storeWorked: Effect.Effect<void>
}

export const make = (directory: string): Effect.Effect<MemoryDir> =>
  Effect.gen(function*() {
    const paths = Layout.files(directory)
    const runKey = path.resolve(directory)
    // File locks identify owners by pid, so fibers of this process must take
    // turns before touching them.
    const writeMutex = yield* Effect.makeSemaphore(1)
    const compactionMutex = yield* Effect.makeSemaphore(1)
    let storageFailing = false
    // The first locked section of this process clears every leftover of an
    // interrupted compaction; later ones check only the commit journal,
    // unless the lock was taken over from a dead owner (who may have died
    // mid-compaction).
    let leftoversCleared = false
    // The last locked section ended well: no commit of this process is left half done.
    let settled = false
    // This process holds the compaction lock file: no other process can commit now.
    let ownCompaction = false
    const recover = (clean: boolean) => {
      if (clean && leftoversCleared) return Layout.finishCommit(paths)
      Layout.recover(paths)
      leftoversCleared = true
    }
    /** Runs a locked section's body, noting whether it ended well. */
    const settle = <A>(run: () => Either.Either<A, MemoryError>): Either.Either<A, MemoryError> => {
      settled = false
      const result = run()
      settled = Either.isRight(result)
      return result
    }

    const lockRefused = (error: FileLock.LockHeld | FileLock.LockFailed) =>
      new MemoryError({
        reason: "locked",
        message: error._tag === "LockHeld" ? `${directory} stayed locked by process ${error.ownerPid}` : `cannot lock ${directory}: ${error.message}`
      })

    const locked = <A>(
      what: string,
      run: () => Either.Either<A, MemoryError>,
      unlocked?: () => Either.Either<A, MemoryError>
    ): Effect.Effect<A, MemoryError> =>
      writeMutex.withPermits(1)(Effect.suspend(() => {
        // A link holding the pid: one symlink(2) to take, one unlink(2) to release.
        let taken = FileLock.tryTakeSync(paths.writeLock, { link: true })
        if (Either.isLeft(taken) && taken.left._tag === "LockFailed" && !fs.existsSync(directory)) {
          // Removed under a running agent (by hand): make it again rather than fail every turn.
          Either.try(() => Layout.makeDirectories(directory))
          taken = FileLock.tryTakeSync(paths.writeLock, { link: true })
        }
        // The usual case, a free lock: take it, work and release in one synchronous step.
        if (Either.isRight(taken)) {
          const clean = taken.right.clean
          return fsEffect(what, () => {
            try {
              return settle(() => {
                recover(clean)
                return run()
              })
            } finally {
              FileLock.releaseSync(paths.writeLock, true)
            }
          })
        }
        const failed = (error: FileLock.LockHeld | FileLock.LockFailed) =>
          error._tag === "LockFailed" && unlocked !== undefined
            ? fsEffect(what, unlocked)
            : Effect.fail(lockRefused(error))
        if (taken.left._tag === "LockFailed") return failed(taken.left)
        return Effect.scoped(
          FileLock.holdWaiting(paths.writeLock).pipe(
            Effect.matchEffect({
              onFailure: failed,
              onSuccess: () =>
                fsEffect(what, () =>
                  settle(() => {
                    recover(false)
                    return run()
                  }))
            })
          )
        )
      }))

    const lockedAsync = <A>(what: string, run: Effect.Effect<A, MemoryError>): Effect.Effect<A, MemoryError> =>
      writeMutex.withPermits(1)(Effect.suspend(() => {
        const taken = FileLock.tryTakeSync(paths.writeLock, { link: true })
        const body = (clean: boolean) =>
          Effect.uninterruptible(Effect.zipRight(
            fsEffect(what, () => {
              settled = false
              recover(clean)
              return Either.void
            }),
            Effect.tap(run, () => Effect.sync(() => {
              settled = true
            }))
          ))
        if (Either.isRight(taken)) {
          return Effect.uninterruptible(
            Effect.ensuring(body(taken.right.clean), Effect.sync(() => FileLock.releaseSync(paths.writeLock, true)))
          )
        }
        if (taken.left._tag === "LockFailed") {
          return Effect.fail(lockRefused(taken.left))
        }
        return Effect.scoped(
          FileLock.holdWaiting(paths.writeLock).pipe(
            Effect.mapError(lockRefused),
            Effect.zipRight(body(false))
          )
        )
      }))

    /**
     * A compaction of another process announces itself by its lock file,
     * taken before it reads history to commit; seen after our write, it may
     * have missed it. A lock left by a dead compaction is cleared here,
     * under the write lock, as the next compaction would take it over.
     */
    const othersCompacting = () => !ownCompaction && fs.existsSync(paths.compactionLock)
    const clearStaleCompaction = () => {
      // Our own pid may be our own compaction between taking its lock and saying so.
      const owner = FileLock.ownerOf(paths.compactionLock)
      if (ownCompaction || Number.isNaN(owner) || owner === process.pid) return
      const taken = FileLock.tryTakeSync(paths.compactionLock, { link: true })
      if (Either.isRight(taken)) FileLock.releaseSync(paths.compactionLock, true)
    }

    const appendAlone = <A>(
      what: string,
      fast: () => Either.Either<AloneOutcome<A>, MemoryError>,
      slow: () => Either.Either<A, MemoryError>,
      redo: () => Either.Either<A, MemoryError>
    ): Effect.Effect<A, MemoryError> =>
      Effect.suspend(() => !heldByRun(runKey) ? locked(what, slow) : writeMutex.withPermits(1)(Effect.suspend(() => {
        if (!(leftoversCleared && settled)) return Effect.succeed("locked" as const)
        return Effect.map(fsEffect(what, fast), (outcome) =>
          outcome._tag === "Locked" ? "locked" as const : othersCompacting() ? "conflict" as const : outcome)
      })).pipe(Effect.flatMap((outcome) =>
        outcome === "locked"
          ? locked(what, slow)
          : outcome === "conflict"
          ? locked(what, () => {
            const result = redo()
            clearStaleCompaction()
            return result
          })
          : Effect.succeed(outcome.value)
      )))

    const storeFailed = (error: MemoryError) =>
      Effect.suspend(() => {
        const again = new MemoryError({ reason: error.reason, message: error.message, cause: error.cause, reported: true })
        if (storageFailing) return Effect.fail(again)
        storageFailing = true
        const free = SafeFile.freeBytes(directory)
        return Effect.logError(
          `cannot store exchanges: ${error.message}; ${free === undefined ? "free space unknown" : `${free} bytes free`} ` +
            `on the filesystem of ${directory}. Replies are still sent; unstored exchanges wait in the inbox journal ` +
            "and are stored once writing works again (logged once)"
        ).pipe(Effect.zipRight(Effect.fail(again)))
      })

    const storeWorked = Effect.suspend(() => {
      if (!storageFailing) return Effect.void
      storageFailing = false
      return Effect.logInfo(`memory in ${directory} is writable again`)
    })

    return {
      directory,
      paths,
      locked,
      lockedAsync,
      appendAlone,
      compacting: (held) => {
        ownCompaction = held
      },
      compactionMutex,
      storageFailing: Effect.sync(() => storageFailing),
      storeFailed,
      storeWorked
    } satisfies MemoryDir
  })

const tolerated = new Set(["ENOSPC", "EDQUOT"])

/**
 * Makes sure the memory directory exists and is writable, and that no file
 * the agent writes is a link, a non-regular file or someone else's: a clear
 * error at start-up beats a failure on the first reply. A full disk is only
 * a warning: turns are answered, and stored once space returns.
 */
export const ensureWritable = (directory: string): Effect.Effect<void, MemoryError> =>
  Effect.gen(function*() {
    const probed = yield* fsEffect(`memory directory ${directory} is not writable`, () => {
      Layout.makeDirectories(directory)
      // access(2) says yes to root on a read-only or immutable directory: only a real write tells.
      const probe = path.join(directory, `.planckclaw-probe-${process.pid}`)
      Either.try(() => fs.unlinkSync(probe))
      const created = Either.try(() => {
        fs.writeFileSync(probe, "", { mode: 0o600, flag: "wx" })
        fs.unlinkSync(probe)
      })
      if (Either.isLeft(created)) {
        const code = errnoCode(created.left)
        if (code === undefined || !tolerated.has(code)) return Either.left(new MemoryError({
          reason: "unwritable",
          message: `memory directory ${directory} is not writable: ${describeError(created.left)}`,
          cause: created.left
        }))
      }
      const paths = Layout.files(directory)
      for (const file of Layout.written(paths)) {
        const checked = SafeFile.check(file)
        if (Either.isLeft(checked)) return Either.left(fromFileError(checked.left))
      }
      if (fs.existsSync(paths.history)) fs.accessSync(paths.history, fs.constants.R_OK | fs.constants.W_OK)
      return Either.right(Either.isLeft(created))
    }, "unwritable")
    if (probed) {
      const free = SafeFile.freeBytes(directory)
      yield* Effect.logWarning(
        `memory directory ${directory} is full (${free ?? "unknown"} bytes free): replies are sent, ` +
          "and exchanges are stored once space returns"
      )
    }
  })
