/**
 * Catch.ts's one-step catches against the Effect combinators they stand
 * for, on every shape of outcome: the same exit, and the same handler
 * called with the same value.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { catchFailure, catchFailureOrDefect, mapFailure } from "../src/Catch.js"

class Boom {
  constructor(readonly name: string) {}
}

const fiber = 1
const causes: ReadonlyArray<[string, Cause.Cause<string>]> = [
  ["a failure", Cause.fail("f1")],
  ["a defect", Cause.die(new Boom("d1"))],
  ["an interruption", Cause.interrupt(fiber)],
  ["nothing", Cause.empty],
  ["two failures in sequence", Cause.combine(Cause.fail("f1"), Cause.fail("f2"))],
  ["a failure then a defect", Cause.combine(Cause.fail("f1"), Cause.die(new Boom("d1")))],
  ["a defect then a failure", Cause.combine(Cause.die(new Boom("d1")), Cause.fail("f1"))],
  ["a failure beside an interruption", Cause.combine(Cause.fail("f1"), Cause.interrupt(fiber))],
  ["a defect beside an interruption", Cause.combine(Cause.interrupt(fiber), Cause.die(new Boom("d2")))]
]
const outcomes: ReadonlyArray<[string, Effect.Effect<number, string>]> = [
  ["a success", Effect.succeed(1)],
  ...causes.map(([name, cause]): [string, Effect.Effect<number, string>] => [name, Effect.failCause(cause)])
]

/** Each handler's effect: recovers, fails, or dies, after noting what it was given. */
const handlers = (seen: Array<unknown>) => [
  (value: unknown) => Effect.sync(() => seen.push(value)).pipe(Effect.as(2)),
  (value: unknown) => Effect.andThen(Effect.sync(() => seen.push(value)), Effect.fail("again")),
  (value: unknown) => Effect.andThen(Effect.sync(() => seen.push(value)), Effect.die(new Boom("in handler")))
]

describe("Catch", () => {
  for (const [name, outcome] of outcomes) {
    it.effect(`catchFailure handles ${name} as Effect.catch does`, () =>
      Effect.gen(function*() {
        for (let h = 0; h < 3; h++) {
          const seenOurs: Array<unknown> = []
          const seenTheirs: Array<unknown> = []
          const ours = yield* Effect.exit(catchFailure(outcome, handlers(seenOurs)[h]!))
          const theirs = yield* Effect.exit(Effect.catch(outcome, handlers(seenTheirs)[h]!))
          expect(ours).toEqual(theirs)
          expect(seenOurs).toEqual(seenTheirs)
        }
      }))

    it.effect(`catchFailureOrDefect handles ${name} as catchAll then catchAllDefect do`, () =>
      Effect.gen(function*() {
        for (let f = 0; f < 3; f++) {
          const seenOurs: Array<unknown> = []
          const seenTheirs: Array<unknown> = []
          // The failure handler may die (its defect goes to the defect handler); the defect handler recovers.
          const onFailure = (seen: Array<unknown>) => (error: string) =>
            f === 1 ? Effect.as(Effect.sync(() => seen.push(error)), 3) : handlers(seen)[f === 0 ? 0 : 2]!(error) as Effect.Effect<number>
          const onDefect = (seen: Array<unknown>) => (defect: unknown) => Effect.as(Effect.sync(() => seen.push(["defect", defect])), 4)
          const ours = yield* Effect.exit(catchFailureOrDefect(outcome, onFailure(seenOurs), onDefect(seenOurs)))
          const theirs = yield* Effect.exit(
            outcome.pipe(Effect.catch(onFailure(seenTheirs)), Effect.catchDefect(onDefect(seenTheirs)))
          )
          expect(ours).toEqual(theirs)
          expect(seenOurs).toEqual(seenTheirs)
        }
      }))
  }

  for (const [name, outcome] of outcomes) {
    it.effect(`mapFailure maps ${name} as Effect.mapError does`, () =>
      Effect.gen(function*() {
        const seenOurs: Array<unknown> = []
        const seenTheirs: Array<unknown> = []
        const ours = yield* Effect.exit(mapFailure(outcome, (error) => (seenOurs.push(error), `mapped ${error}`)))
        const theirs = yield* Effect.exit(Effect.mapError(outcome, (error) => (seenTheirs.push(error), `mapped ${error}`)))
        expect(ours).toEqual(theirs)
        expect(seenOurs).toEqual(seenTheirs)
      }))
  }

  it.effect("the exits compared are not all alike", () =>
    Effect.gen(function*() {
      const exits = yield* Effect.forEach(outcomes, ([, outcome]) => Effect.exit(catchFailure(outcome, () => Effect.succeed(2))))
      expect(exits.filter(Exit.isSuccess).length).toBeGreaterThan(1)
      expect(exits.filter(Exit.isFailure).length).toBeGreaterThan(1)
    }))
})
