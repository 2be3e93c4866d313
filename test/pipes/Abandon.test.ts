/**
 * A request the agent gives up (its turn cancelled) reaches a built-in
 * bridge of the same process over the pipes: the brain's work on it and a
 * claw running for it are interrupted, and the next request is answered at
 * once instead of waiting behind the owed answer.
 */
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as Scripted from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as Abandon from "../../src/pipes/Abandon.js"
import * as BrainFifo from "../../src/pipes/FifoBrain.js"
import * as ClawsFifo from "../../src/pipes/FifoClaws.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { serveBrain, serveClaws } from "../../src/pipes/Serve.js"
import { tempDir } from "../support/FifoKit.js"
import { captureLogs } from "../support/LogCapture.js"

const runtime = Effect.flatMap(tempDir, (dir) => makeRuntimeDir(path.join(dir, "run")))

/** Says it started, then holds until interrupted, and says that too. */
const held = <A>(started: Deferred.Deferred<void>, interrupted: Deferred.Deferred<void>) =>
  Effect.andThen(Deferred.succeed(started, undefined), Effect.never as Effect.Effect<A>).pipe(
    Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
  )

const request = { model: "m", max_tokens: 1, messages: [{ role: "user" as const, content: "hi" }] }

describe("a request given up by the agent", () => {
  it.effect("interrupts the brain's work on it, and the next request is answered at once, with no warning of its answer", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const paths = yield* runtime.pipe(Effect.provide(logs.layer))
      const started = yield* Deferred.make<void>()
      const aborted = yield* Deferred.make<void>()
      const scripted = yield* Scripted.make([() => held(started, aborted), Scripted.text("next")])
      const given = Abandon.make()
      yield* Effect.forkScoped(serveBrain(scripted.service, paths, { abandon: given }))
      const brain = yield* BrainFifo.make({ paths, abandon: given.abandon }).pipe(Effect.provide(logs.layer))
      const asking = yield* Effect.forkChild(brain.complete(request))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(asking)
      yield* Deferred.await(aborted)
      const answer = yield* brain.complete(request)
      expect(answer.content).toEqual([{ type: "text", text: "next" }])
      // Its answer was skipped before the next request went out, as expected, not as a late one.
      expect(logs.lines.filter((line) => line.includes("discarded"))).toEqual([])
    }))

  it.effect("interrupts a claw running for it (the script claws then kill its process group)", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const started = yield* Deferred.make<void>()
      const killed = yield* Deferred.make<void>()
      let calls = 0
      const tool: InMemoryClaws.InMemoryTool = {
        definition: { name: "slow", description: "takes its time", input_schema: { type: "object", properties: {} } },
        run: () => ++calls === 1 ? held(started, killed) : Effect.succeed({ content: "quick", isError: false })
      }
      const given = Abandon.make()
      yield* Effect.forkScoped(serveClaws(InMemoryClaws.make([tool]), paths, { abandon: given }))
      const claws = yield* ClawsFifo.make({ paths, abandon: given.abandon })
      const calling = yield* Effect.forkChild(claws.call("slow", {}))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(calling)
      yield* Deferred.await(killed)
      expect(yield* claws.call("slow", {})).toEqual({ content: "quick", isError: false })
    }))

  it("is not held against a request the far end has not reached, nor against a later one", () => {
    const given = Abandon.make()
    given.abandon(2)
    const outcomes = [1, 2, 3].map((n) => Effect.runSync(given.serve(n, Effect.succeed("served"), "given up")))
    expect(outcomes).toEqual(["given up", "given up", "served"])
  })
})
