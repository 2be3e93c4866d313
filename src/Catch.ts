/**
 * `Effect.catch`, `catch` followed by `catchDefect`, and `Effect.mapError`,
 * as one `catchCause` each: the same handling, fewer steps of the run loop
 * on the way through. Written for Effect 3, whose `catchAll` and `mapError`
 * pushed a handler for both outcomes and, on success, made and ran one more
 * effect to pass the value on; a failure handler alone costs one push,
 * popped unseen on success. On the path of every turn (issue 11). Effect 4's
 * `catch` and `mapError` are one `catchCause` themselves; the pair still
 * saves a step. And `Effect.ensuring` of a synchronous release, for a region
 * that is already uninterruptible.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"

/**
 * Every failure made a defect, as `Effect.catch` passes on a cause that holds
 * defects (a `Done` stays a failure, as there, so a pull still completes).
 * The cause's error type is gone once its failures are defects; a `Done`
 * kept is the runtime's signal, never one of ours.
 */
const electFailures = <E>(cause: Cause.Cause<E>): Cause.Cause<never> =>
  Cause.hasFails(cause)
    ? Cause.fromReasons(cause.reasons.map((reason) =>
      Cause.isFailReason(reason) && !Cause.isDone(reason.error)
        ? Cause.makeDieReason(reason.error).annotate(Cause.reasonAnnotations(reason))
        : reason
    )) as Cause.Cause<never>
    : cause as Cause.Cause<never>

/** What `Effect.catch` does with a cause: the handler for its first failure unless it holds a defect; else the cause. */
const onCause = <E, B, E2, R2>(
  cause: Cause.Cause<E>,
  onFailure: (error: E) => Effect.Effect<B, E2, R2>
): Effect.Effect<B, E2, R2> => {
  if (Cause.hasDies(cause)) return Effect.failCause(electFailures(cause))
  const failure = cause.reasons.find(Cause.isFailReason)
  return failure !== undefined ? onFailure(failure.error) : Effect.failCause(cause as Cause.Cause<never>)
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
    const die = cause.reasons.find(Cause.isDieReason)
    return die !== undefined ? onDefect(die.defect) : Effect.failCause(cause)
  }
  return Effect.catchCause(self, (cause) => Effect.catchCause(onCause(cause, onFailure), defectOf))
}

/** `Effect.mapError(self, f)`, in one step on success instead of two. */
export const mapFailure = <A, E, R, E2>(self: Effect.Effect<A, E, R>, f: (error: E) => E2): Effect.Effect<A, E2, R> =>
  Effect.catchCause(self, (cause) => Effect.failCause(Cause.map(cause, f)))

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
