import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Scope } from "effect"
import { TestClock } from "effect/testing"
import { makeDeadline } from "../../src/pipes/Deadline.js"
import { pendingSleeps } from "../support/TestClockWait.js"

/** Lets the watchdog run until it sleeps until `instant` (ms on the TestClock). */
const awaitSleepUntil = (instant: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 100_000; turn++) {
      if ((yield* pendingSleeps).includes(instant)) return
      yield* Effect.yieldNow
    }
    return yield* Effect.die(new Error(`no sleep until ${instant}`))
  })

const seconds = Duration.seconds

describe("Deadline", () => {
  it.effect("expires a timer once its timeout has passed on the clock, not before, and once", () =>
    Effect.gen(function*() {
      const deadline = yield* makeDeadline
      const fired: Array<string> = []
      deadline.set(seconds(10), () => fired.push("a"))
      yield* awaitSleepUntil(10_000)
      yield* TestClock.adjust("9 seconds")
      expect(fired).toEqual([])
      yield* TestClock.adjust("1 second")
      expect(fired).toEqual(["a"])
      yield* TestClock.adjust("1 minute")
      expect(fired).toEqual(["a"])
    }))

  it.effect("never expires a cleared timer", () =>
    Effect.gen(function*() {
      const deadline = yield* makeDeadline
      const fired: Array<string> = []
      deadline.set(seconds(10), () => fired.push("a"))
      yield* awaitSleepUntil(10_000)
      deadline.clear()
      yield* TestClock.adjust("1 minute")
      expect(fired).toEqual([])
    }))

  it.effect("gives a timer set after a cleared one its own deadline, not the earlier wake-up", () =>
    Effect.gen(function*() {
      const deadline = yield* makeDeadline
      const fired: Array<string> = []
      deadline.set(seconds(10), () => fired.push("a"))
      yield* awaitSleepUntil(10_000)
      deadline.clear()
      yield* TestClock.adjust("5 seconds")
      deadline.set(seconds(10), () => fired.push("b"))
      yield* TestClock.adjust("5 seconds")
      // The watchdog woke at 10 s and sleeps on until b's deadline.
      yield* awaitSleepUntil(15_000)
      expect(fired).toEqual([])
      yield* TestClock.adjust("5 seconds")
      expect(fired).toEqual(["b"])
    }))

  it.effect("expires a shorter timer on time while the watchdog sleeps for a longer one", () =>
    Effect.gen(function*() {
      const deadline = yield* makeDeadline
      const fired: Array<string> = []
      deadline.set(seconds(60), () => fired.push("long"))
      yield* awaitSleepUntil(60_000)
      deadline.set(seconds(10), () => fired.push("short"))
      yield* awaitSleepUntil(10_000)
      yield* TestClock.adjust("10 seconds")
      expect(fired).toEqual(["short"])
      yield* TestClock.adjust("2 minutes")
      expect(fired).toEqual(["short"])
    }))

  it.effect("honours a timer set by the expiry of the one before", () =>
    Effect.gen(function*() {
      const deadline = yield* makeDeadline
      const fired: Array<string> = []
      deadline.set(seconds(10), () => {
        fired.push("a")
        deadline.set(seconds(10), () => fired.push("b"))
      })
      yield* awaitSleepUntil(10_000)
      yield* TestClock.adjust("10 seconds")
      expect(fired).toEqual(["a"])
      yield* awaitSleepUntil(20_000)
      yield* TestClock.adjust("10 seconds")
      expect(fired).toEqual(["a", "b"])
    }))

  it.effect("expires nothing once its scope is closed", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const deadline = yield* Scope.provide(makeDeadline, scope)
      const fired: Array<string> = []
      deadline.set(seconds(10), () => fired.push("a"))
      yield* awaitSleepUntil(10_000)
      yield* Scope.close(scope, Exit.void)
      yield* TestClock.adjust("1 minute")
      expect(fired).toEqual([])
    }))
})
