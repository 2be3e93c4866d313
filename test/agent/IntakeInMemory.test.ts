/**
 * Intake reads an adapter's message stream as a stream (Stream.runForEach):
 * the in-memory adapter's gives the same messages, one per pull, in order,
 * and the same end (a failure with Cause.Done); any other stream is served
 * the same way. (Before, Intake took the in-memory and FIFO adapters' own
 * pull past the stream, DirectPull, and any other stream through its pull.)
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Exit, Fiber, Layer, Queue, Stream } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import { text } from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as Intake from "../../src/agent/Intake.js"
import { Interact, type OutboundMessage } from "../../src/ports/Interact.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"

describe("the in-memory adapter's message stream, pulled", () => {
  it.effect("pulls one message at a time, in order, waits for the next, and ends with Done", () =>
    Effect.gen(function*() {
      const handle = yield* InMemoryInteract.make
      const pull = yield* Stream.toPull(handle.service.messages)
      yield* handle.offer({ channel: "a", text: "one" })
      yield* handle.offer({ channel: "a", text: "two" })
      expect(yield* pull).toEqual([{ channel: "a", text: "one" }])
      expect(yield* pull).toEqual([{ channel: "a", text: "two" }])
      const waiting = yield* Effect.forkChild(pull)
      yield* handle.offer({ channel: "b", text: "three" })
      expect(yield* Fiber.join(waiting)).toEqual([{ channel: "b", text: "three" }])
      yield* handle.end
      expect(yield* Effect.exit(pull)).toEqual(Exit.fail(Cause.Done()))
    }))
})

describe("Intake over any stream", () => {
  it.effect("answers a plain stream's messages in order and ends with it", () =>
    Effect.gen(function*() {
      const directory = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-intake-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      const replies = yield* Queue.unbounded<OutboundMessage>()
      const interact = Layer.succeed(Interact, {
        messages: Stream.make({ channel: "a", text: "one" }, { channel: "b", text: "two" }),
        send: (message) => Queue.offer(replies, message)
      })
      const brain = yield* ScriptedBrain.make([text("first"), text("second")])
      const context = yield* Layer.build(Agent.layerWithMemory.pipe(
        Layer.provideMerge(interact),
        Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: directory }, { preserveEmptyStrings: true })))
      ))
      // Returns once the stream has ended and both are answered.
      yield* Intake.run.pipe(Effect.provide(context))
      const sent = yield* Queue.takeAll(replies)
      expect(sent.map(({ channel, text }) => ({ channel, text }))).toEqual([
        { channel: "a", text: "first" },
        { channel: "b", text: "second" }
      ])
    }))
})
