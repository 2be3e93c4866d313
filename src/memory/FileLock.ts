/**
 * Cross-process locks on the memory directory, as files created with O_EXCL
 * holding the owner's pid. A lock whose owner is dead (a killed run) is stale
 * and taken over. Node has no flock(2); this is the portable equivalent.
 */
import * as fs from "node:fs"
import { Data, Duration, Effect, Either, Schedule, type Scope } from "effect"

export class LockHeld extends Data.TaggedError("LockHeld")<{
  readonly path: string
  readonly ownerPid: number
}> {}

export class LockFailed extends Data.TaggedError("LockFailed")<{
  readonly path: string
  readonly message: string
}> {}

/** Whether a process with this pid exists (a live lock or pid-file owner). */
export const isAlive = (pid: number): boolean => {
  if (!Number.isInteger(pid) || pid <= 0) return false
  const probe = Either.try(() => process.kill(pid, 0))
  // EPERM means the process exists but belongs to someone else: still alive.
  return Either.isRight(probe) || (probe.left as NodeJS.ErrnoException).code === "EPERM"
}

const readOwner = (path: string): number => {
  const content = Either.try(() => fs.readFileSync(path, "utf8"))
  return Either.isRight(content) ? Number.parseInt(content.right, 10) : Number.NaN
}

/** One attempt: take the lock, or say who holds it. Synchronous. */
export const tryTakeSync = (path: string): Either.Either<void, LockHeld | LockFailed> => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const created = Either.try(() => {
        const fd = fs.openSync(path, "wx", 0o600)
        fs.writeSync(fd, `${process.pid}\n`)
        fs.closeSync(fd)
      })
      if (Either.isRight(created)) return Either.void
      const code = (created.left as NodeJS.ErrnoException).code
      if (code !== "EEXIST") {
        return Either.left(new LockFailed({ path, message: (created.left as Error).message }))
      }
      const owner = readOwner(path)
      // Our own pid on a file we do not hold in this process: left by an
      // earlier process that had the same pid (containers reuse low pids).
      if (isAlive(owner) && owner !== process.pid) return Either.left(new LockHeld({ path, ownerPid: owner }))
      if (Number.isNaN(owner)) {
        // Being written right now by its creator, or truncated by a crash:
        // only a file older than a second is treated as stale.
        const stat = Either.try(() => fs.statSync(path))
        if (Either.isRight(stat) && Date.now() - stat.right.mtimeMs < 1000) {
          return Either.left(new LockHeld({ path, ownerPid: owner }))
        }
      }
      Either.try(() => fs.unlinkSync(path))
    }
    return Either.left(new LockFailed({ path, message: "lock file keeps reappearing" }))
}

const tryTake = (path: string): Effect.Effect<void, LockHeld | LockFailed> => Effect.suspend(() => tryTakeSync(path))

/** Releases a lock this process holds. Synchronous. */
export const releaseSync = (path: string): void => {
  if (readOwner(path) === process.pid) Either.try(() => fs.unlinkSync(path))
}

const release = (path: string) => Effect.sync(() => releaseSync(path))

/** Takes the lock for the scope, or fails at once if a live process holds it. */
export const hold = (path: string): Effect.Effect<void, LockHeld | LockFailed, Scope.Scope> =>
  Effect.acquireRelease(tryTake(path), () => release(path))

/**
 * Takes the lock for the scope, waiting while another process holds it.
 * Used for short critical sections (an append, a compaction commit).
 */
export const holdWaiting = (
  path: string,
  patience: Duration.DurationInput = Duration.seconds(30)
): Effect.Effect<void, LockHeld | LockFailed, Scope.Scope> =>
  Effect.acquireRelease(
    tryTake(path).pipe(
      Effect.retry({
        schedule: Schedule.spaced(Duration.millis(5)).pipe(Schedule.upTo(patience)),
        while: (error) => error._tag === "LockHeld"
      })
    ),
    () => release(path)
  )
