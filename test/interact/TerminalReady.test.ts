/**
 * In a run the terminal's hint and first prompt wait for the agent
 * (AgentReady): nobody is invited to type while a start-up step that can
 * still fail is pending, and a line typed early is kept, not lost.
 */
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Stream } from "effect"
import * as Terminal from "../../src/interact/TerminalInteract.js"

/** Lets the streams deliver what was written (readline reads on the next turns of the event loop). */
const settle = Effect.promise(() => new Promise((resolve) => setImmediate(resolve))).pipe(Effect.repeat({ times: 3 }))

const open = (ready: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const input = new PassThrough()
    const output = new PassThrough()
    const written: Array<string> = []
    output.on("data", (chunk: Buffer) => void written.push(chunk.toString("utf8")))
    const terminal = yield* Terminal.make({ input, output, interactive: true, ready })
    return { input, terminal, all: () => written.join("") }
  })

describe("the terminal's first prompt in a run", () => {
  it.live("waits for the agent: no hint and no prompt before, both once it is ready", () =>
    Effect.scoped(Effect.gen(function*() {
      const ready = yield* Deferred.make<void>()
      const t = yield* open(Deferred.await(ready))
      yield* settle
      expect(t.all()).not.toContain(Terminal.HINT)
      expect(t.all()).not.toContain(Terminal.PROMPT)
      yield* Deferred.succeed(ready, undefined)
      yield* settle
      const text = t.all()
      expect(text).toContain(Terminal.HINT)
      expect(text.indexOf(Terminal.HINT)).toBeLessThan(text.indexOf(Terminal.PROMPT))
    })))

  it.live("keeps a line typed before the agent is ready and sends it", () =>
    Effect.scoped(Effect.gen(function*() {
      const ready = yield* Deferred.make<void>()
      const t = yield* open(Deferred.await(ready))
      const first = yield* Effect.forkChild(Stream.runCollect(Stream.take(t.terminal.messages, 1)))
      t.input.write("early\r")
      yield* settle
      yield* Deferred.succeed(ready, undefined)
      const messages = (yield* Fiber.join(first)).map((message) => message.text)
      expect(messages).toEqual(["early"])
    })))

  it.live("a start-up that fails before the agent is ready shows no prompt", () =>
    Effect.scoped(Effect.gen(function*() {
      const ready = yield* Deferred.make<void>()
      const t = yield* open(Deferred.await(ready))
      yield* Deferred.interrupt(ready)
      yield* settle
      expect(t.all()).toBe("")
    })))
})
