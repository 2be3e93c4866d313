/**
 * Driving real I/O under the TestClock: the real undici client with jitter
 * pinned to its midpoint (backoff exactly 1s, 2s, 4s, …), and a way to move
 * the clock only once the code under test has gone to sleep, which HTTP,
 * FIFO and child-process tests alike need.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Chunk, Clock, Duration, Effect, Random, TestClock, TestServices } from "effect"

/**
 * Jitter at its midpoint: retries sleep exactly 1 s, 2 s, 4 s…, so a test can
 * wait for that very sleep (advanceTo). Fibers the effect forks inherit it.
 */
export const withPinnedJitter = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.withRandom(effect, Random.fixed([0.5]))

export const withRealHttp = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(withPinnedJitter, Effect.provide(NodeHttpClient.layerUndici))

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
