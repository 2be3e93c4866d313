/**
 * Effect's Latch as the wake-up of a taker (Intake's loop, the FIFO and
 * in-memory interacts' takes, ServeClaws' loop), which took the place of
 * src/Wakeups.ts: a taker finding nothing closes the latch and awaits it; a
 * producer adds its item and opens it (`openUnsafe`, from a plain
 * callback), which resumes every waiter at once, on the producer's own
 * stack, before `openUnsafe` returns; each looks again. A taker that finds
 * nothing again waits again (no spinning on a latch left open), one
 * interrupted before the item came leaves it for the next, and one woken in
 * the same step as it is interrupted has taken the item already.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Latch } from "effect"

/** The pattern of the callers: an array and a latch. */
const makeInbox = <A>() => {
  const items: Array<A> = []
  const arrived = Latch.makeUnsafe(false)
  let looks = 0
  const put = (item: A) => {
    items.push(item)
    arrived.openUnsafe()
  }
  const take: Effect.Effect<A> = Effect.suspend(() => {
    looks++
    if (items.length > 0) return Effect.succeed(items.shift()!)
    arrived.closeUnsafe()
    return Effect.andThen(arrived.await, take)
  })
  return { items, put, take, looks: () => looks }
}

describe("a Latch as a taker's wake-up", () => {
  it.effect("a waiting taker has the item as soon as openUnsafe returns", () =>
    Effect.gen(function*() {
      const inbox = makeInbox<string>()
      const taker = yield* Effect.forkChild(inbox.take)
      yield* Effect.yieldNow
      expect(taker.pollUnsafe()).toBeUndefined()
      inbox.put("a")
      expect(taker.pollUnsafe()).toEqual(Exit.succeed("a"))
    }))

  it.effect("takers woken together: the first takes the item, the others wait again without spinning", () =>
    Effect.gen(function*() {
      const inbox = makeInbox<string>()
      const first = yield* Effect.forkChild(inbox.take)
      const second = yield* Effect.forkChild(inbox.take)
      yield* Effect.yieldNow
      const before = inbox.looks()
      inbox.put("a")
      expect(first.pollUnsafe()).toEqual(Exit.succeed("a"))
      expect(second.pollUnsafe()).toBeUndefined()
      // Each woken taker looked once more, no more.
      expect(inbox.looks() - before).toBe(2)
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      expect(inbox.looks() - before).toBe(2)
      inbox.put("b")
      expect(second.pollUnsafe()).toEqual(Exit.succeed("b"))
    }))

  it.effect("an item put while nobody waits is taken at once by the next take", () =>
    Effect.gen(function*() {
      const inbox = makeInbox<string>()
      inbox.put("a")
      inbox.put("b")
      expect(yield* inbox.take).toBe("a")
      expect(yield* inbox.take).toBe("b")
      const taker = yield* Effect.forkChild(inbox.take)
      yield* Effect.yieldNow
      expect(taker.pollUnsafe()).toBeUndefined()
      inbox.put("c")
      expect(yield* Fiber.join(taker)).toBe("c")
    }))

  it.effect("a taker interrupted before the item came leaves it for the next", () =>
    Effect.gen(function*() {
      const inbox = makeInbox<string>()
      const gaveUp = yield* Effect.forkChild(inbox.take)
      yield* Effect.yieldNow
      yield* Fiber.interrupt(gaveUp)
      inbox.put("a")
      expect(inbox.items).toEqual(["a"])
      expect(yield* inbox.take).toBe("a")
    }))

  it.effect("a taker woken in the same step as it is interrupted has the item: nothing is lost", () =>
    Effect.gen(function*() {
      const inbox = makeInbox<string>()
      const woken = yield* Effect.forkChild(inbox.take)
      yield* Effect.yieldNow
      yield* Effect.sync(() => {
        inbox.put("a")
        woken.interruptUnsafe(woken.id)
      })
      expect(yield* Fiber.await(woken)).toEqual(Exit.succeed("a"))
      expect(inbox.items).toEqual([])
    }))

  it.effect("a taker interrupted in the same step, before the item came, leaves it for the next", () =>
    Effect.gen(function*() {
      const inbox = makeInbox<string>()
      const gaveUp = yield* Effect.forkChild(inbox.take)
      yield* Effect.yieldNow
      yield* Effect.sync(() => {
        gaveUp.interruptUnsafe(gaveUp.id)
        inbox.put("a")
      })
      expect(Exit.hasInterrupts(yield* Fiber.await(gaveUp))).toBe(true)
      expect(yield* inbox.take).toBe("a")
    }))
})
