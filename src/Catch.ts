/**
 * `Effect.catch`, `catchAll` followed by `catchAllDefect`, and
 * `Effect.mapError`, as one `catchAllCause` each: the same handling, fewer
 * steps of the run loop on the way through. `catchAll` and `mapError` push a
 * handler for both outcomes and, on success, make and run one more effect to
 * pass the value on; a failure handler alone costs one push, popped unseen on
 * success. On the path of every turn (issue 11). And `Effect.ensuring` of a
 * synchronous release, for a region that is already uninterruptible.
 */
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"

/** Every failure made a defect, as `catchAll` passes on a cause that holds defects. */
const electFailures = <E>(cause: Cause.Cause<E>): Cause.Cause<never> =>
  Cause.match(cause, {
    onEmpty: Cause.empty,
    onFail: (error) => Cause.die(error),
    onDie: (defect) => Cause.die(defect),
    onInterrupt: (fiberId) => Cause.interrupt(fiberId),
    onSequential: (left, right) => Cause.sequential(left, right),
    onParallel: (left, right) => Cause.parallel(left, right)
  })

/** What `catchAll` does with a cause: the handler for its first failure unless it holds a defect; else the cause. */
const onCause = <E, B, E2, R2>(
  cause: Cause.Cause<E>,
  onFailure: (error: E) => Effect.Effect<B, E2, R2>
): Effect.Effect<B, E2, R2> => {
  if (Cause.defects(cause).length > 0) return Effect.failCause(electFailures(cause))
  const failures = Cause.failures(cause)
  return Chunk.isNonEmpty(failures) ? onFailure(Chunk.headNonEmpty(failures)) : Effect.failCause(cause as Cause.Cause<never>)
}

/** `Effect.catch(self, onFailure)`, in one step on success instead of two. */
export const catchFailure = <A, E, R, B, E2, R2>(
  self: Effect.Effect<A, E, R>,
  onFailure: (error: E) => Effect.Effect<B, E2, R2>
): Effect.Effect<A | B, E2, R | R2> => Effect.catchCause(self, (cause) => onCause(cause, onFailure))

/**
 * `self.pipe(Effect.catch(onFailure), Effect.catchDefect(onDefect))`,
 * in one step on success instead of three. As there, a defect of
 * `onFailure`'s own effect goes to `onDefect` too.
 */
export const catchFailureOrDefect = <A, E, R, B, R2, C, R3>(
  self: Effect.Effect<A, E, R>,
  onFailure: (error: E) => Effect.Effect<B, never, R2>,
  onDefect: (defect: unknown) => Effect.Effect<C, never, R3>
): Effect.Effect<A | B | C, never, R | R2 | R3> => {
  const defectOf = (cause: Cause.Cause<never>): Effect.Effect<C, never, R3> => {
    const die = Cause.find(cause, (part) => Cause.isDieType(part) ? Option.some(part.defect) : Option.none())
    return Option.isSome(die) ? onDefect(die.value) : Effect.failCause(cause)
  }
  return Effect.catchCause(self, (cause) => Effect.catchCause(onCause(cause, onFailure), defectOf))
}

/** `Effect.mapError(self, f)`, in one step on success instead of two. */
export const mapFailure = <A, E, R, E2>(self: Effect.Effect<A, E, R>, f: (error: E) => E2): Effect.Effect<A, E2, R> =>
  Effect.catchCause(self, (cause) => {
    const failure = Cause.failureOrCause(cause)
    return Result.isFailure(failure) ? Effect.failSync(() => f(failure.failure)) : Effect.failCause(failure.success)
  })

/**
 * Runs `release` once `self` ends, however it ends, then gives its outcome:
 * `Effect.ensuring(self, Effect.sync(release))` without the mask and the
 * extra steps, for callers already inside an uninterruptible region (with
 * `self` restored), where nothing can come between the two.
 */
export const thenRelease = <A, E, R>(self: Effect.Effect<A, E, R>, release: () => void): Effect.Effect<A, E, R> =>
  Effect.matchCauseEffect(self, {
    onFailure: (cause) => {
      release()
      return Effect.failCause(cause)
    },
    onSuccess: (value) => {
      release()
      return Effect.succeed(value)
    }
  })
