/**
 * An agent keeps nothing of the caller whose message started it. The map of
 * agents (LayerMap, over RcMap) merges its caller's context into a start,
 * and what the start forks keeps it for as long as the agent runs: for a
 * message over HTTP, the request's fiber, its request and its response
 * objects, about 5 KiB of heap per agent. See `started` in
 * src/hosts/serve/AgentHost.ts. Checked with V8's own collector
 * (IdleCollection.majorCollection) and a WeakRef.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import * as IdleCollection from "../../../src/runtime/process/IdleCollection.js"
import { yieldToEventLoop } from "../../support/TestClockWait.js"
import { echoBrain, startHost, tempDir } from "./Kit.js"

class FirstCaller extends Context.Service<FirstCaller, { readonly name: string }>()("test/FirstCaller") {}

/** Past the current job (a WeakRef's target lives at least to its end), then a full collection. */
const collected = Effect.andThen(yieldToEventLoop, IdleCollection.majorCollection)

describe("an agent started by a message", () => {
  it.effect("keeps nothing its first caller provided once the message is answered, while it runs on", () =>
    Effect.gen(function*() {
      const agents = yield* startHost(tempDir(), echoBrain().layer)
      const caller = yield* Effect.suspend(() => {
        const services = { name: "the first caller's" }
        return agents.send("ann", { text: "hi" }).pipe(Effect.provideService(FirstCaller, services), Effect.as(new WeakRef(services)))
      })
      yield* collected
      yield* collected
      expect((yield* agents.get("ann")).state).toBe("running")
      expect(caller.deref()).toBeUndefined()
    }).pipe(Effect.scoped))
})
