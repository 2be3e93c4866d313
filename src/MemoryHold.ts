/**
 * A run holds its memory directory for its whole life: checked writable,
 * then locked against a second run (a compaction is not a run: it takes the
 * write lock only to plan and commit, see Compactor). Holding it makes this
 * run the directory's only appender, so its appends skip the per-append
 * write lock file; a `planckclaw compact` beside it announces itself by the
 * compaction lock file, which each append checks after writing (MemoryDir.appendAlone).
 */
import * as path from "node:path"
import type * as ConfigError from "effect/ConfigError"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as FileLock from "./memory/FileLock.js"
import * as Memory from "./memory/Memory.js"
import * as RunHeld from "./memory/RunHeld.js"

/** Another live run holds the memory directory. */
export class MemoryInUse extends Data.TaggedError("MemoryInUse")<{
  readonly pid: number
  readonly directory: string
  readonly message: string
}> {}

/** The run lock could not be taken (not held by anyone: the file system refused). */
export class MemoryLockFailed extends Data.TaggedError("MemoryLockFailed")<{
  readonly directory: string
  readonly message: string
  readonly cause?: unknown
}> {}

export const runLockName = ".planckclaw-run.lock"

/** Checks and holds PLANCKCLAW_DIR for the scope. */
export const hold: Effect.Effect<
  void,
  ConfigError.ConfigError | Memory.MemoryError | MemoryInUse | MemoryLockFailed,
  Scope.Scope
> = Effect.gen(function*() {
  const directory = yield* Memory.MemoryConfig
  yield* Memory.ensureWritable(directory)
  yield* FileLock.hold(path.join(directory, runLockName)).pipe(
    Effect.catchTags({
      LockHeld: (held) =>
        new MemoryInUse({
          pid: held.ownerPid,
          directory,
          message: `another planckclaw run (pid ${held.ownerPid}) is using the memory directory ${directory}`
        }),
      LockFailed: (failed) =>
        new MemoryLockFailed({
          directory,
          message: `cannot use the memory directory ${directory}: ${failed.message}`,
          cause: failed
        })
    })
  )
  // This run is now the directory's only appender: its appends go without the write lock file.
  yield* Effect.acquireRelease(Effect.sync(() => RunHeld.holdForRun(directory)), (release) => Effect.sync(release))
})

export const layer: Layer.Layer<never, ConfigError.ConfigError | Memory.MemoryError | MemoryInUse | MemoryLockFailed> =
  Layer.scopedDiscard(hold)
