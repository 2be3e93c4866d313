/**
 * A turn held open through a compaction's TurnGate, for tests of what may
 * run beside a turn: it runs until `finish`, on deferreds, never on time.
 */
import { Deferred, Effect, Fiber } from "effect"
import type * as TurnGate from "../../src/memory/TurnGate.js"

/**
 * Forks a turn through `gate` and returns once it runs; `finish` ends it
 * (calling `onEnd`, when given, as it ends) and waits for it.
 */
export const heldTurn = (gate: TurnGate.TurnGate, onEnd?: () => void) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const end = yield* Deferred.make<void>()
    const fiber = yield* Effect.forkChild(gate.turn(
      Deferred.succeed(started, undefined).pipe(
        Effect.andThen(Deferred.await(end)),
        Effect.andThen(Effect.sync(() => onEnd?.()))
      )
    ))
    yield* Deferred.await(started)
    return { fiber, finish: Effect.andThen(Deferred.succeed(end, undefined), Fiber.join(fiber)) }
  })
