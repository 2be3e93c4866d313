/**
 * One timer at a time for plain-callback code (Exchange), on Effect's Clock
 * (a TestClock in tests) without a fiber per timer.
 *
 * Kept, not replaced by Effect's own timeouts: bench/compare.mjs turn-fifo
 * (Node 24, 2 busy cores; new / old as the median of alternating rounds'
 * ratios, range in brackets), the exchange otherwise the same:
 * - `Effect.timeoutOrElse` per request (a race of two fibers), 12 rounds:
 *   turn p50 over the do-nothing agent x1.23 (1.04-1.72) with the shipped
 *   claws, x1.20 (1.02-1.53) with the instant claw; main-thread CPU per
 *   plain turn x1.18 (0.90-1.47) and x1.16 (0.98-1.40).
 * - a fiber per request sleeping on the Clock, interrupted when the answer
 *   comes, 20 rounds against this watchdog: main-thread CPU per plain turn
 *   x1.12 (0.82-1.31) with the shipped claws, x1.09 (0.81-1.44) with the
 *   instant claw (x1.11 in 12 rounds against the build before).
 * The same build against itself moved those rows by x1.02-1.05. A timer per
 * request costs a setTimeout, a clearTimeout and one or two fibers on every
 * exchange (two per plain turn, four with a tool round); a cleared deadline
 * here costs nothing.
 *
 * A timer is a deadline; one watchdog fiber sleeps until the earliest
 * deadline it was armed for and, on waking, expires the timer if it is due,
 * or sleeps on until the current deadline. Setting and clearing a timer only
 * write a variable: a timer cleared before it expires (a request answered in
 * time, the usual case) costs no fiber, no sleep and no interruption. The
 * watchdog is restarted only for a deadline earlier than its wake-up, and
 * stops once it wakes with no timer set.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"

export interface Deadline {
  /** Replaces the timer: `onExpiry` runs once `timeout` has passed on the Clock, unless the timer is set or cleared first. */
  readonly set: (timeout: Duration.Duration, onExpiry: () => void) => void
  readonly clear: () => void
}

export const makeDeadline: Effect.Effect<Deadline, never, Scope.Scope> = Effect.gen(function*() {
  // The builder's runtime and Clock: a TestClock in tests drives the watchdog.
  const fork = Effect.runForkWith(yield* Effect.context<never>())
  const clock = yield* Clock.Clock
  // Monotonic (a wall-clock jump moves no deadline); a TestClock moves it as it is adjusted.
  const now = () => Number(clock.monotonicTimeNanosUnsafe()) / 1e6

  let timer: { readonly at: number; readonly onExpiry: () => void } | undefined
  /** When the watchdog wakes up; undefined while none sleeps. */
  let wakeAt: number | undefined
  let watchdog: Fiber.Fiber<void> | undefined
  // Interruption is delivered asynchronously: a watchdog that was replaced
  // may still wake up, and must then do nothing.
  let generation = 0

  /** After a wake-up: expires the timer if due; how long to sleep on, or undefined to stop. */
  const onWake = (): number | undefined => {
    const due = timer
    if (due !== undefined && now() >= due.at) {
      timer = undefined
      due.onExpiry() // may set the next timer
    }
    const next = timer
    wakeAt = next?.at
    return next === undefined ? undefined : Math.max(0, next.at - now())
  }
  const watch = (own: number, millis: number): Effect.Effect<void> =>
    Effect.flatMap(Effect.sleep(Duration.millis(millis)), () => {
      if (own !== generation) return Effect.void
      const more = onWake()
      return more === undefined ? Effect.void : watch(own, more)
    })
  const restart = (at: number) => {
    watchdog?.interruptUnsafe()
    generation += 1
    wakeAt = at
    watchdog = fork(watch(generation, Math.max(0, at - now())))
  }

  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      generation += 1
      timer = undefined
      return watchdog === undefined ? Effect.void : Fiber.interrupt(watchdog)
    })
  )

  return {
    set: (timeout, onExpiry) => {
      const millis = Duration.toMillis(timeout)
      if (!Number.isFinite(millis)) {
        timer = undefined
        return
      }
      const at = now() + millis
      timer = { at, onExpiry }
      if (wakeAt === undefined || at < wakeAt) restart(at)
    },
    clear: () => {
      timer = undefined
    }
  }
})
