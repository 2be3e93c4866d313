/**
 * A run holds its memory directory for its whole life (as an embedder's
 * Agent.layerWithMemory does for its scope): checked writable,
 * then locked against a second run (a compaction is not a run: it takes the
 * write lock only to plan and commit, see Compactor). Holding it makes this
 * run the directory's only appender, so its appends skip the per-append
 * write lock file; a `planckclaw compact` beside it announces itself by the
 * compaction lock file, which each append checks after writing (MemoryDir.appendAlone).
 */
import * as path from "node:path"
import type * as ConfigError from "effect/Config"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as FileLock from "./FileLock.js"
import * as Memory from "./Memory.js"
import * as RunHeld from "./RunHeld.js"

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

/**
 * Proof that this process holds PLANCKCLAW_DIR's run lock (`layer`): what
 * an agent on a held directory needs (Agent.layerOnHeldMemory), as its
 * inbox journal assumes it is the directory's only writer.
 */
export class MemoryHeld extends Context.Service<MemoryHeld, { readonly directory: string }>()("planckclaw/MemoryHeld") {}

/** Checks and holds PLANCKCLAW_DIR for the scope; the directory held. */
export const hold: Effect.Effect<
  string,
  ConfigError.ConfigError | Memory.MemoryError | MemoryInUse | MemoryLockFailed,
  Scope.Scope
> = Effect.gen(function*() {
  const directory = yield* Memory.MemoryConfig
  yield* Memory.ensureWritable(directory)
  const lockFile = path.join(directory, runLockName)
  yield* FileLock.hold(lockFile).pipe(
    Effect.catchTags({
      LockHeld: (held) =>
        new MemoryInUse({
          pid: held.ownerPid,
          directory,
          message: `another planckclaw (pid ${held.ownerPid}: a run, or a serve that started this agent) is using the memory directory ${directory}`
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
  // Its other locks are hard links to this one (MemoryDir), which names this process.
  yield* Effect.acquireRelease(Effect.sync(() => RunHeld.holdForRun(directory, lockFile)), (release) => Effect.sync(release))
  return directory
})

/**
 * Holds an agent's directory (`serve`) for the scope, as a run holds its
 * own: the same lock file, so a second process (another `serve` on the
 * same agents, a `planckclaw run` pointed at the agent) is refused rather
 * than share the inbox journal, and the agent's appends go without the
 * write lock file. Taken as a hard link to the host's owner file
 * (OwnerFile.ts), else as a symbolic link naming the pid. Shared in this
 * process through RunHeld's count of holders: an instance restarting after
 * a defect starts while the old one is still closing.
 */
export const holdAgent = (
  directory: string,
  ownerFile?: string
): Effect.Effect<void, MemoryInUse | MemoryLockFailed, Scope.Scope> => {
  const lock = path.join(directory, runLockName)
  const key = path.resolve(directory)
  return Effect.acquireRelease(
    Effect.suspend(() => {
      // Shared with this process's other holders of the agent only: a `hold` here (an embedder's
      // Agent.layerWithMemory) names its lock file, and refuses the agent below as another process would.
      if (RunHeld.heldByRun(key) && RunHeld.runLockFile(key) === undefined) return Effect.succeed(RunHeld.holdForRun(directory))
      const taken = FileLock.tryTakeSync(lock, { link: true, ownerFile })
      if (Result.isFailure(taken)) {
        const error = taken.failure
        return Effect.fail(
          error._tag === "LockHeld"
            ? new MemoryInUse({
              pid: error.ownerPid,
              directory,
              message: Number.isNaN(error.ownerPid)
                ? `${directory} is being taken by another planckclaw process`
                : `another planckclaw process (pid ${error.ownerPid}) is using ${directory}`
            })
            : new MemoryLockFailed({ directory, message: `cannot use ${directory}: ${error.message}`, cause: error })
        )
      }
      return Effect.succeed(RunHeld.holdForRun(directory))
    }),
    (unhold) =>
      Effect.sync(() => {
        unhold()
        // The last holder in this process lets the file go.
        if (!RunHeld.heldByRun(key)) FileLock.releaseSync(lock)
      })
  )
}

/**
 * PLANCKCLAW_DIR held for the layer's scope: a second holder, in this
 * process or another, is refused with MemoryInUse. What `run` takes before
 * anything else, and what Agent.layerWithMemory takes; a host pairing
 * Memory.layer and Inbox.layer itself provides it before them.
 */
export const layer: Layer.Layer<MemoryHeld, ConfigError.ConfigError | Memory.MemoryError | MemoryInUse | MemoryLockFailed> =
  Layer.effect(MemoryHeld, Effect.map(hold, (directory) => ({ directory })))
