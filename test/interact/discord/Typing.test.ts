import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Ref } from "effect"
import { TestClock } from "effect/testing"
import * as Typing from "../../../src/interact/discord/Typing.js"

/** A `show` that records which channel it was called for and when (TestClock time, in seconds). */
const recorder = Effect.gen(function*() {
  const shown = yield* Ref.make<ReadonlyArray<string>>([])
  const show = (channel: string) =>
    Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => Ref.update(shown, (all) => [...all, `${channel}@${now / 1000}`]))
    )
  return { shown, show }
})

/** Lets the typing fibers run what the last step made due. */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

describe("Typing", () => {
  it.effect("shows at once and again every 8 seconds until the reply is out", () =>
    Effect.gen(function*() {
      const { show, shown } = yield* recorder
      const typing = yield* Typing.make(show)
      yield* typing.begin("c1")
      yield* settle
      expect(yield* Ref.get(shown)).toEqual(["c1@0"])
      yield* TestClock.adjust("7 seconds")
      expect(yield* Ref.get(shown)).toEqual(["c1@0"])
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("8 seconds")
      expect(yield* Ref.get(shown)).toEqual(["c1@0", "c1@8", "c1@16"])
      yield* typing.end("c1")
      yield* TestClock.adjust("1 minute")
      expect(yield* Ref.get(shown)).toEqual(["c1@0", "c1@8", "c1@16"])
    }))

  it.effect("keeps typing until every queued message in the channel has its reply", () =>
    Effect.gen(function*() {
      const { show, shown } = yield* recorder
      const typing = yield* Typing.make(show)
      yield* typing.begin("c1")
      yield* typing.begin("c1")
      yield* typing.begin("c2")
      yield* settle
      yield* TestClock.adjust("8 seconds")
      expect([...yield* Ref.get(shown)].sort()).toEqual(["c1@0", "c1@8", "c2@0", "c2@8"])
      yield* typing.end("c1")
      yield* settle
      // Discord hid the indicator when the first reply was posted: shown again at once.
      expect((yield* Ref.get(shown)).slice(4)).toEqual(["c1@8"])
      yield* typing.end("c2")
      yield* TestClock.adjust("8 seconds")
      expect((yield* Ref.get(shown)).slice(5)).toEqual(["c1@16"])
      yield* typing.end("c1")
      yield* TestClock.adjust("1 minute")
      expect((yield* Ref.get(shown)).slice(6)).toEqual([])
    }))

  it.effect("keeps refreshing when showing fails, and still stops", () =>
    Effect.gen(function*() {
      const attempts = yield* Ref.make(0)
      const typing = yield* Typing.make(() => Ref.update(attempts, (n) => n + 1).pipe(Effect.andThen(Effect.fail("503"))))
      yield* typing.begin("c1")
      yield* settle
      yield* TestClock.adjust("16 seconds")
      expect(yield* Ref.get(attempts)).toBe(3)
      yield* typing.end("c1")
      yield* TestClock.adjust("1 minute")
      expect(yield* Ref.get(attempts)).toBe(3)
    }))

  it.effect("does not wait for a request that hangs before refreshing", () =>
    Effect.gen(function*() {
      const attempts = yield* Ref.make(0)
      const typing = yield* Typing.make(() => Ref.update(attempts, (n) => n + 1).pipe(Effect.andThen(Effect.never)))
      yield* typing.begin("c1")
      yield* settle
      yield* TestClock.adjust("8 seconds")
      yield* settle
      expect(yield* Ref.get(attempts)).toBe(2)
      yield* TestClock.adjust("8 seconds")
      yield* settle
      expect(yield* Ref.get(attempts)).toBe(3)
      yield* typing.end("c1")
    }))

  it.effect("gives up on a reply that never comes, and starts again for the next message", () =>
    Effect.gen(function*() {
      const { show, shown } = yield* recorder
      const typing = yield* Typing.make(show, { refreshEvery: "8 seconds", giveUpAfter: "1 minute" })
      yield* typing.begin("c1")
      yield* settle
      yield* TestClock.adjust("10 minutes")
      expect((yield* Ref.get(shown)).at(-1)).toBe("c1@56")
      expect((yield* Ref.get(shown)).length).toBe(8)
      yield* typing.begin("c1")
      yield* settle
      expect((yield* Ref.get(shown)).at(-1)).toBe("c1@600")
      // The reply that never came no longer counts: one end stops the indicator.
      yield* typing.end("c1")
      yield* TestClock.adjust("1 minute")
      expect((yield* Ref.get(shown)).length).toBe(9)
    }))

  it.effect("forgets every reply still counted when it gives up: an end after that changes nothing", () =>
    Effect.gen(function*() {
      const { show, shown } = yield* recorder
      const typing = yield* Typing.make(show, { refreshEvery: "8 seconds", giveUpAfter: "16 seconds" })
      yield* typing.begin("c1")
      yield* typing.begin("c1")
      yield* settle
      yield* TestClock.adjust("1 minute")
      expect(yield* Ref.get(shown)).toEqual(["c1@0", "c1@8", "c1@16"])
      // Two replies were pending; neither came. A late end does not start it again.
      yield* typing.end("c1")
      yield* TestClock.adjust("1 minute")
      expect((yield* Ref.get(shown)).length).toBe(3)
      // A new message counts alone: its one end stops the indicator.
      yield* typing.begin("c1")
      yield* settle
      yield* typing.end("c1")
      yield* TestClock.adjust("1 minute")
      expect(yield* Ref.get(shown)).toEqual(["c1@0", "c1@8", "c1@16", "c1@120"])
    }))

  it.effect("ignores an end without a begin", () =>
    Effect.gen(function*() {
      const { show, shown } = yield* recorder
      const typing = yield* Typing.make(show)
      yield* typing.end("c1")
      yield* typing.begin("c1")
      yield* settle
      yield* typing.end("c1")
      yield* TestClock.adjust("1 minute")
      expect(yield* Ref.get(shown)).toEqual(["c1@0"])
    }))
})
