/**
 * What the agent relies on from Effect's own error handling, which took the
 * place of src/Catch.ts: on every shape of outcome, `Effect.catch` hands
 * its handler the first failure and nothing else (a defect or an
 * interruption alone goes on untouched, a defect beside a failure wins), so
 * a turn's failure becomes the failure answer and nothing else does;
 * `catch` then `catchDefect` answers a defect too, even one of the failure
 * handler, and lets an interruption through (Agent.respond, Agent's
 * delivery); `mapError` changes the failures only (FifoClaws, FifoInteract);
 * and `ensuring` inside an uninterruptible mask runs its release once
 * however the section ends (TurnGate's count).
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber } from "effect"

class Boom {
  constructor(readonly name: string) {}
}

const fiber = 1
const d1 = new Boom("d1")
const d2 = new Boom("d2")
const cases: ReadonlyArray<{
  readonly name: string
  readonly cause: Cause.Cause<string>
  /** What `Effect.catch`'s handler is given, or: the cause passes on (`passes`), its failures made defects (`elected`). */
  readonly caught: string | "passes" | "elected"
  /** What `catchDefect` is given after `catch`, when the handler is not called. */
  readonly defect?: unknown
}> = [
  { name: "a failure", cause: Cause.fail("f1"), caught: "f1" },
  { name: "a defect", cause: Cause.die(d1), caught: "passes", defect: d1 },
  { name: "an interruption", cause: Cause.interrupt(fiber), caught: "passes" },
  { name: "two failures in sequence", cause: Cause.combine(Cause.fail("f1"), Cause.fail("f2")), caught: "f1" },
  { name: "a failure then a defect", cause: Cause.combine(Cause.fail("f1"), Cause.die(d1)), caught: "elected", defect: "f1" },
  { name: "a defect then a failure", cause: Cause.combine(Cause.die(d1), Cause.fail("f1")), caught: "elected", defect: d1 },
  { name: "a failure beside an interruption", cause: Cause.combine(Cause.fail("f1"), Cause.interrupt(fiber)), caught: "f1" },
  { name: "a defect beside an interruption", cause: Cause.combine(Cause.interrupt(fiber), Cause.die(d2)), caught: "passes", defect: d2 }
]

/** The cause with every failure made a defect, as `Effect.catch` passes on a cause that holds a defect. */
const elected = (cause: Cause.Cause<string>): Cause.Cause<never> =>
  Cause.fromReasons(cause.reasons.map((reason) => Cause.isFailReason(reason) ? Cause.makeDieReason(reason.error) : reason))

describe("Effect.catch, catchDefect and mapError, as the agent uses them", () => {
  it.effect("a success passes through every one of them, no handler called", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const note = (value: unknown) => Effect.sync(() => seen.push(value)).pipe(Effect.as(0))
      expect(yield* Effect.catch(Effect.succeed(1), note)).toBe(1)
      expect(yield* Effect.succeed(1).pipe(Effect.catch(note), Effect.catchDefect(note))).toBe(1)
      expect(yield* Effect.mapError(Effect.succeed(1), (e) => (seen.push(e), e))).toBe(1)
      expect(seen).toEqual([])
    }))

  for (const { name, cause, caught, defect } of cases) {
    it.effect(`Effect.catch on ${name}: ${caught === "passes" ? "the cause passes on" : caught === "elected" ? "its failures pass on as defects" : `the handler gets ${caught}`}`, () =>
      Effect.gen(function*() {
        const seen: Array<unknown> = []
        const exit = yield* Effect.exit(Effect.catch(Effect.failCause(cause), (error) => Effect.sync(() => seen.push(error)).pipe(Effect.as(2))))
        if (caught === "passes") {
          expect(seen).toEqual([])
          expect(exit).toEqual(Exit.failCause(cause))
        } else if (caught === "elected") {
          expect(seen).toEqual([])
          expect(exit).toEqual(Exit.failCause(elected(cause)))
        } else {
          expect(seen).toEqual([caught])
          expect(exit).toEqual(Exit.succeed(2))
        }
      }))

    it.effect(`catch then catchDefect on ${name}: answered unless only interrupted`, () =>
      Effect.gen(function*() {
        for (const failureHandlerDies of [false, true]) {
          const seen: Array<unknown> = []
          const exit = yield* Effect.exit(Effect.failCause(cause).pipe(
            Effect.catch((error) =>
              Effect.andThen(Effect.sync(() => seen.push(["failure", error])), failureHandlerDies ? Effect.die(new Boom("in handler")) : Effect.succeed(3))
            ),
            Effect.catchDefect((value) => Effect.as(Effect.sync(() => seen.push(["defect", value])), 4))
          ))
          if (caught === "passes" && defect === undefined) {
            // An interruption is never answered: the turn stops.
            expect(seen).toEqual([])
            expect(Exit.hasInterrupts(exit)).toBe(true)
          } else if (caught === "passes" || caught === "elected") {
            expect(seen).toEqual([["defect", defect]])
            expect(exit).toEqual(Exit.succeed(4))
          } else if (failureHandlerDies) {
            expect(seen).toEqual([["failure", caught], ["defect", new Boom("in handler")]])
            expect(exit).toEqual(Exit.succeed(4))
          } else {
            expect(seen).toEqual([["failure", caught]])
            expect(exit).toEqual(Exit.succeed(3))
          }
        }
      }))

    it.effect(`mapError on ${name}: every failure mapped, defects and interruptions kept`, () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(Effect.mapError(Effect.failCause(cause), (error) => `mapped ${error}`))
        expect(exit).toEqual(Exit.failCause(Cause.map(cause, (error) => `mapped ${error}`)))
      }))
  }

  it.effect("ensuring in an uninterruptible mask releases once, however the section ends", () =>
    Effect.gen(function*() {
      let held = 0
      let releases = 0
      const section = <A, E>(self: Effect.Effect<A, E>) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.suspend(() => {
            held++
            return Effect.ensuring(restore(self), Effect.sync(() => (held--, releases++)))
          })
        )
      expect(yield* section(Effect.succeed(1))).toBe(1)
      expect(yield* Effect.exit(section(Effect.fail("no")))).toEqual(Exit.fail("no"))
      expect(yield* Effect.exit(section(Effect.die(d1)))).toEqual(Exit.die(d1))
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Effect.forkChild(section(Effect.andThen(Deferred.succeed(started, undefined), Effect.never)))
      yield* Deferred.await(started)
      expect(held).toBe(1)
      yield* Fiber.interrupt(interrupted)
      expect(held).toBe(0)
      expect(releases).toBe(4)
    }))
})
