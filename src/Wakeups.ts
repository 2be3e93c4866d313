/**
 * Fibers waiting for something a plain callback will provide (a message, a
 * line), woken rather than handed it: each waiter runs its `retry` once
 * woken and takes the thing itself. A waiter interrupted meanwhile takes
 * nothing, so nothing is lost to it, and a wait needs no canceler (Effect
 * 3 wrapped an `Effect.callback` that returns one in `onInterrupt`, about
 * ten run-loop steps per wait; Effect 4 pushes a finalizer for it; on the
 * path of every turn, issue 11). An interrupted waiter stays listed until
 * the next `wakeAll`, whose resume its fiber then ignores.
 */
import * as Effect from "effect/Effect"

export interface Wakeups {
  /** Waits for the next `wakeAll`, then runs `retry`. */
  readonly wait: <A, E, R>(retry: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Wakes every waiter listed now. */
  readonly wakeAll: () => void
}

export const make = (): Wakeups => {
  let waiting: Array<() => void> = []
  return {
    wait: <A, E, R>(retry: Effect.Effect<A, E, R>) =>
      Effect.callback<A, E, R>((resume) => {
        waiting.push(() => resume(retry))
      }),
    wakeAll: () => {
      if (waiting.length === 0) return
      const woken = waiting
      waiting = []
      for (const wake of woken) wake()
    }
  }
}
