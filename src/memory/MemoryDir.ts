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
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as CommitMirror from "./CommitMirror.js"
import { fsEffect, MemoryError } from "./MemoryFiles.js"
import * as StoreHealth from "./StoreHealth.js"
import * as FileLock from "./FileLock.js"
import { type AloneOutcome, heldByRun, runLockFile } from "./RunHeld.js"
import * as Layout from "./Layout.js"
import type { Alongside, MemoryDir } from "./MemoryDirService.js"

export type { AloneOutcome } from "./RunHeld.js"
export type { Alongside, MemoryDir } from "./MemoryDirService.js"

export { CompactionBusy, fromFileError, fsEffect, MemoryConfig, MemoryError, withHistory } from "./MemoryFiles.js"

/**
 * `ownerFile`: this process's owner file for the locks (OwnerFile.ts), when
 * there is one on this file system. `fresh`: the directory was made just now
 * by this process (a new agent of `serve`), so no commit can have been left
 * half done in it, and a run's first append may go without the lock.
 */
export const make = (
  directory: string,
  options: { readonly ownerFile?: string | undefined; readonly fresh?: boolean | undefined } = {}
): Effect.Effect<MemoryDir> =>
  Effect.gen(function*() {
    const paths = Layout.files(directory)
    const runKey = path.resolve(directory)
    // Locks as hard links to the owner file (a run's: its run lock), else as symbolic links: never created-then-written files.
    const given: FileLock.TakeOptions = { link: true, ownerFile: options.ownerFile }
    const asLink = (): FileLock.TakeOptions =>
      options.ownerFile !== undefined ? given : { link: true, ownerFile: runLockFile(runKey) }
    // File locks identify owners by pid, so fibers of this process must take
    // turns before touching them. Taken on every append.
    const writeMutex = yield* Semaphore.make(1)
    const compactionMutex = yield* Semaphore.make(1)
    // Which fiber of this process holds the write lock file: a locked section,
    // or a commit alongside a run's appends for its whole length (which frees
    // writeMutex between its steps, for the appends, but never the file).
    const lockFileMutex = yield* Semaphore.make(1)
    let mirror: CommitMirror.CommitMirror | undefined
    let adopter: CommitMirror.Adopter | undefined
    let gateOpened: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = (effect) => effect
    // Commits alongside the appends begun and not ended (from before they take the lock file's mutex):
    // a locked section of a turn meanwhile opens the compaction's gate while it waits.
    let alongside = 0
    // A commit alongside the appends holds the write lock file (between its first step and its end).
    let alongsideHolds = false
    // The first locked section of this process clears every leftover of an
    // interrupted compaction; later ones check only the commit journal,
    // unless the lock was taken over from a dead owner (who may have died
    // mid-compaction).
    let leftoversCleared = options.fresh === true
    // The last locked section ended well: no commit of this process is left half done (none yet in a directory made just now).
    let settled = options.fresh === true
    // This process holds the compaction lock file: no other process can commit now.
    let ownCompaction = false
    const recover = (clean: boolean) => {
      if (clean && leftoversCleared) return Layout.finishCommit(paths)
      Layout.recover(paths)
      leftoversCleared = true
    }
    /** Runs a locked section's body, noting whether it ended well. */
    const settle = <A>(run: () => Result.Result<A, MemoryError>): Result.Result<A, MemoryError> => {
      settled = false
      const result = run()
      settled = Result.isSuccess(result)
      return result
    }

    const lockRefused = (error: FileLock.LockHeld | FileLock.LockFailed) =>
      new MemoryError({
        reason: "locked",
        message: error._tag === "LockHeld" ? `${directory} stayed locked by process ${error.ownerPid}` : `cannot lock ${directory}: ${error.message}`
      })

    const inLockFile = <A, E, R>(section: Effect.Effect<A, E, R>) =>
      lockFileMutex.withPermits(1)(writeMutex.withPermits(1)(section))

    const locked = <A>(
      what: string,
      run: () => Result.Result<A, MemoryError>,
      unlocked?: () => Result.Result<A, MemoryError>
    ): Effect.Effect<A, MemoryError> =>
      Effect.suspend(() => alongside > 0 ? gateOpened(lockedNow(what, run, unlocked)) : lockedNow(what, run, unlocked))

    const lockedNow = <A>(
      what: string,
      run: () => Result.Result<A, MemoryError>,
      unlocked?: () => Result.Result<A, MemoryError>
    ): Effect.Effect<A, MemoryError> =>
      inLockFile(Effect.suspend(() => {
        // A link naming the pid (to the owner file, else symbolic): one call to take, one unlink(2) to release.
        let taken = FileLock.tryTakeSync(paths.writeLock, asLink())
        if (Result.isFailure(taken) && taken.failure._tag === "LockFailed" && !fs.existsSync(directory)) {
          // Removed under a running agent (by hand): make it again rather than fail every turn.
          Result.try(() => Layout.makeDirectories(directory))
          // The run's lock went with it: taken again, or a second run would start on the directory.
          const runLock = runLockFile(runKey)
          if (runLock !== undefined) FileLock.tryTakeSync(runLock)
          taken = FileLock.tryTakeSync(paths.writeLock, asLink())
        }
        // The usual case, a free lock: take it, work and release in one synchronous step.
        if (Result.isSuccess(taken)) {
          const clean = taken.success.clean
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
        if (taken.failure._tag === "LockFailed") return failed(taken.failure)
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

    const lockedRead = <A>(
      what: string,
      run: () => Result.Result<A, MemoryError>,
      unlocked?: () => Result.Result<A, MemoryError>
    ): Effect.Effect<A, MemoryError> =>
      writeMutex.withPermits(1)(Effect.suspend(() => alongsideHolds ? Effect.map(fsEffect(what, run), Option.some) : Effect.succeedNone))
        .pipe(Effect.flatMap((read) => Option.match(read, { onNone: () => locked(what, run, unlocked), onSome: (value) => Effect.succeed(value) })))

    /** The write lock file for the scope (uninterruptible: a lock taken always gets its release); true when taken clean. */
    const holdLockFile: Effect.Effect<boolean, MemoryError, Scope.Scope> = Effect.uninterruptible(Effect.suspend(() => {
      const taken = FileLock.tryTakeSync(paths.writeLock, asLink())
      if (Result.isSuccess(taken)) {
        return Effect.as(Effect.addFinalizer(() => Effect.sync(() => FileLock.releaseSync(paths.writeLock, true))), taken.success.clean)
      }
      if (taken.failure._tag === "LockFailed") return Effect.fail(lockRefused(taken.failure))
      return Effect.as(Effect.mapError(FileLock.holdWaiting(paths.writeLock), lockRefused), false)
    }))

    // Uninterruptible under the lock: it is never released under an operation still running.
    const lockedAsync = <A>(what: string, run: Effect.Effect<A, MemoryError>): Effect.Effect<A, MemoryError> =>
      inLockFile(Effect.scoped(Effect.flatMap(holdLockFile, (clean) =>
        Effect.uninterruptible(Effect.andThen(
          fsEffect(what, () => {
            settled = false
            recover(clean)
            return Result.succeed(undefined)
          }),
          Effect.tap(run, () => Effect.sync(() => {
            settled = true
          }))
        )))))

    const lockedAlongside = <A>(what: string, run: (alongside: Alongside) => Effect.Effect<A, MemoryError>) => {
      if (!heldByRun(runKey)) return undefined
      const step = <B>(section: () => Result.Result<B, MemoryError>) => writeMutex.withPermits(1)(fsEffect(what, section))
      const mirrorAppends = (installed: CommitMirror.CommitMirror) => {
        mirror = installed
      }
      const swapped = (ended: CommitMirror.CommitMirror, lines: number, summary: string) => {
        const committed = CommitMirror.committed(ended, lines, summary)
        if (adopter !== undefined && committed !== undefined) {
          ended.adopted = true
          adopter.take(committed)
        }
        CommitMirror.close(ended)
        mirror = undefined
      }
      // Under writeMutex: no append is between its old files and the mirror.
      const end = (failed: boolean) =>
        writeMutex.withPermits(1)(Effect.sync(() => {
          if (mirror !== undefined) CommitMirror.close(mirror)
          mirror = undefined
          alongsideHolds = false
          // Whatever a failure left (a journal, next files), the next section recovers it in full.
          if (failed) settled = false
        }))
      const commit = lockFileMutex.withPermits(1)(Effect.scoped(
        Effect.flatMap(holdLockFile, (clean) =>
          Effect.uninterruptible(Effect.andThen(
            step(() => settle(() => {
              recover(clean)
              alongsideHolds = true
              return Result.succeed(undefined)
            })),
            Effect.onExit(run({ step, mirrorAppends, swapped, ledger: () => adopter?.ledger() }), (exit) => end(Exit.isFailure(exit)))
          )))
      ))
      return Effect.suspend(() => {
        alongside++
        return Effect.ensuring(commit, Effect.sync(() => alongside--))
      })
    }

    /**
     * A compaction of another process announces itself by its lock file,
     * taken before it reads history to commit; seen after our write, it may
     * have missed it. A lock left by a dead compaction is cleared here,
     * under the write lock, as the next compaction would take it over.
     */
    // lstat(2), not access(2): a lock taken on a full disk is a symbolic link
    // to a pid (FileLock.ts), which access would follow to nothing. A look
    // that fails counts as a lock seen (the append is then checked under the lock).
    const othersCompacting = () =>
      !ownCompaction &&
      Result.getOrElse(Result.try(() => fs.lstatSync(paths.compactionLock, { throwIfNoEntry: false }) !== undefined), () => true)
    const clearStaleCompaction = () => {
      // Our own pid may be our own compaction between taking its lock and saying so.
      const owner = FileLock.ownerOf(paths.compactionLock)
      if (ownCompaction || Number.isNaN(owner) || owner === process.pid) return
      const taken = FileLock.tryTakeSync(paths.compactionLock, asLink())
      if (Result.isSuccess(taken)) FileLock.releaseSync(paths.compactionLock, true)
    }

    const appendAlone = <A>(
      what: string,
      fast: () => Result.Result<AloneOutcome<A>, MemoryError>,
      slow: () => Result.Result<A, MemoryError>,
      redo: () => Result.Result<A, MemoryError>,
      stillInPlace: () => boolean
    ): Effect.Effect<A, MemoryError> =>
      Effect.suspend(() => !heldByRun(runKey) ? locked(what, slow) : writeMutex.withPermits(1)(Effect.suspend(() => {
        if (!(leftoversCleared && settled)) return Effect.succeed("locked" as const)
        // In this order: a compaction that read before the write holds its lock until its renames are done.
        return Effect.map(fsEffect(what, fast), (outcome) =>
          outcome._tag === "Locked"
            ? "locked" as const
            : othersCompacting() || !stillInPlace()
            ? "conflict" as const
            : outcome)
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

    const health = StoreHealth.make(directory)

    return {
      directory,
      paths,
      holdCompactionLock: Effect.suspend(() => FileLock.hold(paths.compactionLock, asLink())),
      locked,
      lockedRead,
      lockedAsync,
      lockedAlongside,
      mirror: () => mirror,
      adoptCommits: (registered) => {
        adopter = registered
      },
      openGateWhileLocked: (opened) => {
        gateOpened = opened
      },
      appendAlone,
      compacting: (held) => {
        ownCompaction = held
      },
      compactionMutex,
      ...health
    } satisfies MemoryDir
  })
