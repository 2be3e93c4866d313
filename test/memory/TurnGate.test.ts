/**
 * The gate between an agent's turns and its background compaction's steps:
 * a step waits for the turn in flight, passes at once without one, and a
 * turn that waits for the compaction opens the gate. Turns here are held on
 * deferreds; nothing waits on time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as TurnGate from "../../src/memory/TurnGate.js"
import { heldTurn } from "../support/HeldTurn.js"

/** Forks `gate.step`, recording in `log` when it passed. */
const forkStep = (gate: TurnGate.TurnGate, log: Array<string>, name: string) =>
  Effect.forkChild(Effect.andThen(gate.step, Effect.sync(() => log.push(name))))

describe("TurnGate", () => {
  it.effect("a step passes at once when no turn is in flight", () =>
    Effect.gen(function*() {
      const gate = TurnGate.make()
      const log: Array<string> = []
      yield* Fiber.join(yield* forkStep(gate, log, "step"))
      expect(log).toEqual(["step"])
    }))

  it.effect("a step due during a turn waits until that turn ends", () =>
    Effect.gen(function*() {
      const gate = TurnGate.make()
      const log: Array<string> = []
      const turn = yield* heldTurn(gate, () => log.push("turn ended"))
      const step = yield* forkStep(gate, log, "step")
      // Several event-loop turns go by: the step's setImmediate has long fired and found the turn in flight.
      for (let i = 0; i < 20; i++) yield* Effect.promise(() => new Promise((done) => setImmediate(done)))
      expect(log).toEqual([])
      yield* turn.finish
      yield* Fiber.join(step)
      expect(log).toEqual(["turn ended", "step"])
    }))

  it.effect("a turn that fails or is interrupted still lets the steps through", () =>
    Effect.gen(function*() {
      const gate = TurnGate.make()
      const log: Array<string> = []
      const turn = yield* heldTurn(gate)
      const step = yield* forkStep(gate, log, "step")
      yield* Fiber.interrupt(turn.fiber)
      yield* Fiber.join(step)
      expect(log).toEqual(["step"])
      const failed = yield* Effect.result(gate.turn(Effect.fail("no")))
      expect(failed._tag).toBe("Failure")
      yield* Fiber.join(yield* forkStep(gate, log, "after a failed turn"))
      expect(log).toEqual(["step", "after a failed turn"])
    }))

  it.effect("a turn that waits for the compaction opens the gate, so the wait cannot wait on itself", () =>
    Effect.gen(function*() {
      const gate = TurnGate.make()
      const log: Array<string> = []
      const compaction = yield* Effect.forkChild(Effect.andThen(gate.step, Effect.sync(() => log.push("compaction step"))))
      // The turn (a `/compact`) waits for the compaction, whose step is due during the turn.
      yield* gate.turn(gate.opened(Fiber.join(compaction)))
      expect(log).toEqual(["compaction step"])
    }))

  it.effect("a waiting step that is interrupted is forgotten", () =>
    Effect.gen(function*() {
      const gate = TurnGate.make()
      const log: Array<string> = []
      const turn = yield* heldTurn(gate)
      const interrupted = yield* forkStep(gate, log, "interrupted")
      const kept = yield* forkStep(gate, log, "kept")
      yield* Fiber.interrupt(interrupted)
      yield* turn.finish
      yield* Fiber.join(kept)
      expect(log).toEqual(["kept"])
    }))
})
