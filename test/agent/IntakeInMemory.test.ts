/**
 * Intake reads an adapter's message stream as a stream (Stream.runForEach):
 * the in-memory adapter's gives the same messages, one per pull, in order,
 * and the same end (a failure with Cause.Done); any other stream is served
 * the same way. (Before, Intake took the in-memory and FIFO adapters' own
 * pull past the stream, DirectPull, and any other stream through its pull.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Exit, Fiber, Layer, Queue, Stream } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import { text } from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as Intake from "../../src/agent/Intake.js"
import { Interact, type OutboundMessage } from "../../src/ports/Interact.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import { Inbox } from "../../src/memory/Inbox.js"
import { APOLOGY } from "../../src/agent/Turn.js"
import { tempDir } from "../support/Sandbox.js"
import { yieldToEventLoop } from "../support/TestClockWait.js"
import { captureLogs } from "../support/LogCapture.js"

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
      const directory = yield* tempDir("planckclaw-intake-")
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

  it.effect("a message it could not journal (an internal error) is answered with the apology in its turn, and the next are answered", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir("planckclaw-intake-")
      const replies = yield* Queue.unbounded<OutboundMessage>()
      const interact = Layer.succeed(Interact, {
        messages: Stream.make({ channel: "a", text: "one" }, { channel: "a", text: "two" }, { channel: "b", text: "three" }),
        send: (message) => Queue.offer(replies, message)
      })
      const brain = yield* ScriptedBrain.make([text("first"), text("third")])
      const context = yield* Layer.build(Agent.layerWithMemory.pipe(
        Layer.provideMerge(interact),
        Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: directory }, { preserveEmptyStrings: true })))
      ))
      // The journal dies on "two" (a bug).
      const faulty = Effect.map(Effect.service(Inbox), (inbox) => ({
        ...inbox,
        accept: (message: Parameters<typeof inbox.accept>[0]) =>
          message.text === "two" ? Effect.die(new Error("a bug journaling it")) : inbox.accept(message)
      }))
      // Before, the defect restarted reading, which waited on the (test) clock: so a bounded wait, not a join.
      yield* Intake.run.pipe(Effect.provideServiceEffect(Inbox, faulty), Effect.provide(context), Effect.forkScoped)
      for (let pass = 0; pass < 200 && (yield* Queue.size(replies)) < 3; pass++) yield* yieldToEventLoop
      const sent = yield* Queue.clear(replies)
      expect(sent.map(({ channel, text }) => ({ channel, text }))).toEqual([
        { channel: "a", text: "first" },
        { channel: "a", text: APOLOGY },
        { channel: "b", text: "third" }
      ])
    }))

  it.effect("a stop says how many messages it read and left unanswered, which the next start answers", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir("planckclaw-intake-")
      const logs = yield* captureLogs
      const interact = Layer.succeed(Interact, {
        messages: Stream.concat(Stream.make({ channel: "a", text: "one" }, { channel: "a", text: "two" }), Stream.never),
        send: () => Effect.void
      })
      // The brain never answers "one": the stop comes during its turn, with "two" waiting.
      const brain = yield* ScriptedBrain.make([() => Effect.never])
      const context = yield* Layer.build(Agent.layerWithMemory.pipe(
        Layer.provideMerge(interact),
        Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: directory }, { preserveEmptyStrings: true })))
      ))
      const serving = yield* Intake.run.pipe(Effect.provide(context), Effect.provide(logs.layer), Effect.forkChild)
      for (let pass = 0; pass < 200 && (yield* brain.requests).length === 0; pass++) yield* yieldToEventLoop
      expect((yield* brain.requests).length).toBe(1)
      yield* Fiber.interrupt(serving)
      expect(logs.lines).toContainEqual(
        "INFO stopped with 2 message(s) read and not answered yet: they are kept, and the next start answers them"
      )
    }))
})
