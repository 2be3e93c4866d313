/**
 * Moving the TestClock only once the code under test has gone to sleep:
 * HTTP, FIFO and child-process code registers its sleeps after real I/O (an
 * answer, a child's exit), so the test lets the event loop run until the
 * sleep it means is pending.
 */
import { Chunk, Clock, Duration, Effect, TestClock, TestServices } from "effect"

/**
 * One pass of Node's event loop (no timer involved), so pending I/O can run:
 * Effect's yields are microtasks, and let the loop through only every 2,048.
 */
export const yieldToEventLoop = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Waits until something is asleep on the TestClock until `deadline` (in test
 * clock millis). Code under test registers its sleeps only after real I/O (an
 * answer, a child's exit), so the clock must not move before they exist; the
 * deadline says which sleep, so a stale or wrong one does not count. The
 * real-time watchdog only turns a hang into a readable failure; no assertion
 * depends on real time.
 */
export const awaitPendingSleep = (deadline: number) =>
  Effect.gen(function*() {
    while (!Chunk.some(yield* TestClock.sleeps(), (at) => at === deadline)) {
      yield* yieldToEventLoop
    }
  }).pipe(
    Effect.raceFirst(
      TestServices.provideLive(Effect.sleep("10 seconds")).pipe(
        Effect.zipRight(TestClock.sleeps()),
        Effect.flatMap((pending) =>
          Effect.dieMessage(
            `nothing went to sleep until ${deadline} ms; pending sleeps: ${Chunk.toReadonlyArray(pending).join(", ")}`
          )
        )
      )
    )
  )

/** Moves the TestClock to `deadline` once a sleep until then is pending. */
export const advanceTo = (deadline: number) =>
  Effect.gen(function*() {
    yield* awaitPendingSleep(deadline)
    const now = yield* Clock.currentTimeMillis
    yield* TestClock.adjust(Duration.millis(deadline - now))
  })
