/**
 * A lock for the fibers of one process, as `Semaphore.make(1)` with
 * `withPermits(1)`: one section at a time, the wait interruptible, the lock
 * let go however the section ends. Written for Effect 3, where it was
 * cheaper on the usual path, a free lock: that Semaphore always took its
 * permit through an interruptible async wait and let it go in an
 * `ensuring`, three uninterruptible masks and some thirty run-loop steps a
 * section; this is one mask and about eight. Effect 4's Semaphore takes a
 * free permit in one mask too (whether this stays is measured in phase B).
 * The memory directory takes its write mutex on every append (issue 11).
 *
 * The lock is taken and let go only inside the uninterruptible region, so
 * an interruption can never leave it held; a waiter is only woken, and
 * takes the lock itself once it runs again, so a woken waiter that was
 * interrupted meanwhile takes nothing.
 */
import * as Effect from "effect/Effect"
import { thenRelease } from "./Catch.js"

export interface Mutex {
  /** Runs `self` while holding the lock, waiting (interruptibly) until it is free. */
  readonly withPermits: (permits: 1) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export const make = (): Mutex => {
  let held = false
  const waiters = new Set<() => void>()
  const release = () => {
    held = false
    // Every waiter tries again; the first to run takes the lock, the others wait on.
    if (waiters.size > 0) for (const waiter of [...waiters]) waiter()
  }
  /** Until the lock is let go (at once if it already is). */
  const released = Effect.callback<void>((resume) => {
    if (!held) return resume(Effect.void)
    const waiter = () => {
      waiters.delete(waiter)
      resume(Effect.void)
    }
    waiters.add(waiter)
    return Effect.sync(() => {
      waiters.delete(waiter)
    })
  })
  const withPermits = (_permits: 1) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) => {
      const run = thenRelease(restore(self), release)
      const attempt: Effect.Effect<A, E, R> = Effect.suspend(() => {
        if (held) return Effect.flatMap(restore(released), () => attempt)
        held = true
        return run
      })
      return attempt
    })
  return { withPermits }
}
