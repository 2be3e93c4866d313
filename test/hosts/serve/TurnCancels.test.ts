/**
 * A turn cancelled by its key: interrupted while running, skipped while
 * queued, unknown keys refused; too late once the turn commits its reply.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option } from "effect"
import { TurnCommit } from "../../../src/agent/TurnCommit.js"
import * as TurnCancels from "../../../src/hosts/serve/TurnCancels.js"

/**
 * A turn as the agent runs one: its reply decided once `decided` is done,
 * without interruption in between (the agent's journal write), then
 * committed only if TurnCommit allows, else waiting to be interrupted.
 */
const turnCommittingAfter = (started: Deferred.Deferred<void>, decided: Deferred.Deferred<void>, asked: Array<boolean>) =>
  Effect.gen(function*() {
    yield* Deferred.succeed(started, undefined)
    yield* Effect.uninterruptible(Deferred.await(decided))
    const mayCommit = (yield* Effect.service(TurnCommit))()
    asked.push(mayCommit)
    return mayCommit ? "stored" : yield* Effect.never
  })

describe("TurnCancels", () => {
  it.effect("a running turn is interrupted, a queued one never runs, another key is not cancelled", () =>
    Effect.gen(function*() {
      const cancels = TurnCancels.make()
      const started = yield* Deferred.make<void>()
      let interrupted = false
      cancels.queued("a")
      const running = yield* Effect.forkChild(cancels.run("a", Effect.andThen(Deferred.succeed(started, undefined), Effect.never).pipe(
        Effect.onInterrupt(() => Effect.sync(() => { interrupted = true }))
      )))
      yield* Deferred.await(started)
      expect(yield* cancels.cancel("other")).toBe(false)
      expect(yield* cancels.cancel("a")).toBe(true)
      expect(yield* Fiber.join(running)).toEqual(Option.none())
      expect(interrupted).toBe(true)
      // Answered: cancelling it again finds nothing.
      expect(yield* cancels.cancel("a")).toBe(false)

      cancels.queued("b")
      expect(yield* cancels.cancel("b")).toBe(true)
      let ran = false
      expect(yield* cancels.run("b", Effect.sync(() => { ran = true }))).toEqual(Option.none())
      expect(ran).toBe(false)
      // Without a key, or not cancelled: the turn's own outcome.
      expect(yield* cancels.run(undefined, Effect.succeed(1))).toEqual(Option.some(1))
      cancels.queued("c")
      expect(yield* cancels.run("c", Effect.succeed(2))).toEqual(Option.some(2))
    }))

  it.effect("a message settled without its turn (its agent did not start) is no longer cancellable, and its key's next turn runs", () =>
    Effect.gen(function*() {
      const cancels = TurnCancels.make()
      cancels.queued("d")
      expect(yield* cancels.cancel("d")).toBe(true)
      cancels.settled("d")
      expect(yield* cancels.cancel("d")).toBe(false)
      cancels.queued("d")
      expect(yield* cancels.run("d", Effect.succeed(3))).toEqual(Option.some(3))
    }))

  it.effect("a cancel once the turn commits its reply is too late (false, the reply comes); one before keeps it from committing", () =>
    Effect.gen(function*() {
      const cancels = TurnCancels.make()
      const asked: Array<boolean> = []
      const [started, decided] = [yield* Deferred.make<void>(), yield* Deferred.make<void>()]
      const committed = yield* Effect.forkChild(cancels.run("a", turnCommittingAfter(started, decided, asked)))
      yield* Deferred.await(started)
      yield* Deferred.succeed(decided, undefined)
      yield* Effect.yieldNow
      expect(asked).toEqual([true])
      expect(yield* cancels.cancel("a")).toBe(false)
      expect(yield* Fiber.join(committed)).toEqual(Option.some("stored"))

      // The cancel comes while the reply is being decided, the turn not interruptible: it never commits.
      const [startedB, decidedB] = [yield* Deferred.make<void>(), yield* Deferred.make<void>()]
      const cancelled = yield* Effect.forkChild(cancels.run("b", turnCommittingAfter(startedB, decidedB, asked)))
      yield* Deferred.await(startedB)
      expect(yield* cancels.cancel("b")).toBe(true)
      yield* Deferred.succeed(decidedB, undefined)
      expect(yield* Fiber.join(cancelled)).toEqual(Option.none())
      expect(asked).toEqual([true, false])
    }))
})
