/**
 * Moving the TestClock only once the code under test has gone to sleep:
 * HTTP, FIFO and child-process code registers its sleeps after real I/O (an
 * answer, a child's exit), so the test lets the event loop run until the
 * sleep it means is pending.
 */
import { Clock, Duration, Effect } from "effect"
import { TestClock } from "effect/testing"

/**
 * One pass of Node's event loop (no timer involved), so pending I/O can run:
 * Effect's yields are microtasks, and let the loop through only every 2,048.
 */
export const yieldToEventLoop = Effect.callback<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** Lets a client read what a server on loopback has just sent: a few passes of the event loop, no timer involved. */
export const letArrive = Effect.gen(function*() {
  for (let pass = 0; pass < 20; pass++) yield* yieldToEventLoop
})

/**
 * Waits until something is asleep on the TestClock until `deadline` (in test
 * clock millis). Code under test registers its sleeps only after real I/O (an
 * answer, a child's exit), so the clock must not move before they exist; the
 * deadline says which sleep, so a stale or wrong one does not count, and
 * `count` how many fibers must be asleep until then. The
 * real-time watchdog only turns a hang into a readable failure; no assertion
 * depends on real time.
 */
export const awaitPendingSleep = (deadline: number, count = 1) =>
  Effect.gen(function*() {
    while ((yield* pendingSleeps).filter((timestamp) => timestamp === deadline).length < count) {
      yield* yieldToEventLoop
    }
  }).pipe(
    Effect.raceFirst(
      TestClock.withLive(Effect.sleep("10 seconds")).pipe(
        Effect.andThen(pendingSleeps),
        Effect.flatMap((pending) =>
          Effect.die(new Error(`not ${count} asleep until ${deadline} ms; pending sleeps: ${pending.join(", ")}`))
        )
      )
    )
  )

/**
 * When each sleep pending on the TestClock ends (test clock millis). Effect 4's
 * TestClock keeps them in its `sleeps` field (entries `{ timestamp }`) but has no
 * public reader, as Effect 3's `TestClock.sleeps()` was: read here, and a
 * change of that field fails every test that uses it, loudly, not silently.
 */
export const pendingSleeps: Effect.Effect<ReadonlyArray<number>> = TestClock.testClockWith((clock) => {
  const sleeps = (clock as unknown as { readonly sleeps?: unknown }).sleeps
  return Array.isArray(sleeps)
    ? Effect.succeed(sleeps.map((entry: { readonly timestamp: number }) => entry.timestamp))
    : Effect.die(new Error("the TestClock has no `sleeps` list: effect's TestClock changed; update pendingSleeps"))
})

/** Moves the TestClock to `deadline` once a sleep until then is pending. */
export const advanceTo = (deadline: number) =>
  Effect.gen(function*() {
    yield* awaitPendingSleep(deadline)
    const now = yield* Clock.currentTimeMillis
    yield* TestClock.adjust(Duration.millis(deadline - now))
  })
