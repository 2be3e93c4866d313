/**
 * Effect's Semaphore(1) with `withPermits(1)` as the lock of one process's
 * fibers (MemoryDir's write lock, taken on every append; FifoInteract's
 * write lock), which took the place of src/Mutex.ts: one section at a time,
 * the lock let go however a section ends (success, failure, defect,
 * interruption), an interrupted waiter leaving its place, and a waiter
 * woken then interrupted before it ran taking nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Semaphore } from "effect"

interface Lock {
  readonly withPermits: (permits: 1) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

const kinds: ReadonlyArray<[string, Effect.Effect<Lock>]> = [
  ["Semaphore.make(1)", Semaphore.make(1)]
]

/** Lets every fiber that can run do so. */
const settle = Effect.forEach(Array.from({ length: 20 }), () => Effect.yieldNow, { discard: true })

/** Whether a section started now gets the lock: it must have run once the others have settled. */
const free = (lock: Lock) =>
  Effect.gen(function*() {
    const probe = yield* Effect.forkChild(lock.withPermits(1)(Effect.void))
    yield* settle
    const done = probe.pollUnsafe() !== undefined
    yield* Fiber.interrupt(probe)
    return done
  })

describe("a write lock: Semaphore(1), withPermits(1)", () => {
  for (const [kind, makeLock] of kinds) {
    it.effect(`${kind}: one section at a time, the next once the first ends`, () =>
      Effect.gen(function*() {
        const lock = yield* makeLock
        const gate = yield* Deferred.make<void>()
        const log: Array<string> = []
        const first = yield* Effect.forkChild(lock.withPermits(1)(Effect.andThen(Effect.sync(() => log.push("first in")), Deferred.await(gate))))
        yield* settle
        const second = yield* Effect.forkChild(lock.withPermits(1)(Effect.sync(() => log.push("second in"))))
        yield* settle
        expect(log).toEqual(["first in"])
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(first)
        yield* Fiber.join(second)
        expect(log).toEqual(["first in", "second in"])
      }))

    it.effect(`${kind}: gives back the section's value, failure or defect, and is free after each`, () =>
      Effect.gen(function*() {
        const lock = yield* makeLock
        expect(yield* lock.withPermits(1)(Effect.succeed(1))).toBe(1)
        expect(yield* free(lock)).toBe(true)
        expect(yield* Effect.exit(lock.withPermits(1)(Effect.fail("no")))).toEqual(Exit.fail("no"))
        expect(yield* free(lock)).toBe(true)
        const boom = new Error("boom")
        expect(yield* Effect.exit(lock.withPermits(1)(Effect.die(boom)))).toEqual(Exit.die(boom))
        expect(yield* free(lock)).toBe(true)
      }))

    it.effect(`${kind}: a holder interrupted mid-section lets the lock go`, () =>
      Effect.gen(function*() {
        const lock = yield* makeLock
        const holder = yield* Effect.forkChild(lock.withPermits(1)(Effect.never))
        yield* settle
        expect(yield* free(lock)).toBe(false)
        yield* Fiber.interrupt(holder)
        expect(yield* free(lock)).toBe(true)
      }))

    it.effect(`${kind}: an interrupted waiter leaves; the one behind it gets the lock`, () =>
      Effect.gen(function*() {
        const lock = yield* makeLock
        const gate = yield* Deferred.make<void>()
        const holder = yield* Effect.forkChild(lock.withPermits(1)(Deferred.await(gate)))
        yield* settle
        const log: Array<string> = []
        const waiter = yield* Effect.forkChild(lock.withPermits(1)(Effect.sync(() => log.push("interrupted one"))))
        const behind = yield* Effect.forkChild(lock.withPermits(1)(Effect.sync(() => log.push("one behind"))))
        yield* settle
        yield* Fiber.interrupt(waiter)
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(holder)
        yield* Fiber.join(behind)
        expect(log).toEqual(["one behind"])
        expect(yield* free(lock)).toBe(true)
      }))

    it.effect(`${kind}: a waiter woken and interrupted before it ran takes nothing`, () =>
      Effect.gen(function*() {
        const lock = yield* makeLock
        const gate = yield* Deferred.make<void>()
        const holder = yield* Effect.forkChild(lock.withPermits(1)(Deferred.await(gate)))
        yield* settle
        const waiter = yield* Effect.forkChild(lock.withPermits(1)(Effect.never))
        yield* settle
        // In one step: the holder is let go (waking the waiter) and the waiter is interrupted.
        yield* Effect.sync(() => {
          Deferred.doneUnsafe(gate, Exit.void)
          waiter.interruptUnsafe(waiter.id)
        })
        yield* Fiber.join(holder)
        yield* Fiber.await(waiter)
        expect(yield* free(lock)).toBe(true)
      }))
  }
})
