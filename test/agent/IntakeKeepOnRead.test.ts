/**
 * An adapter that reads ahead of its message stream (FifoInteract) gives
 * Intake each read's messages as it reads them (keepOnRead): Intake
 * journals them there, all of one read in one write, before the stream
 * brings them, and once only. What it read and the agent had not taken
 * when the intake stops, and what it gives at the stop, is in the journal:
 * the next start answers it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect, Fiber, Layer, Queue } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import * as Intake from "../../src/agent/Intake.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import { text } from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import * as Inbox from "../../src/memory/Inbox.js"
import { type InboundMessage, Interact } from "../../src/ports/Interact.js"
import { tempDir } from "../support/Sandbox.js"

/** The in-memory adapter, reading ahead: `read` plays a read (given to `keep`); `offer` hands a message to the stream. */
const setup = (steps: ReadonlyArray<ScriptedBrain.ScriptStep>, unreadAtStop: ReadonlyArray<InboundMessage> = []) =>
  Effect.gen(function*() {
    const directory = yield* tempDir("planckclaw-keep-on-read-")
    const interact = yield* InMemoryInteract.make
    let keep: ((read: ReadonlyArray<InboundMessage>) => void) | undefined
    const readingAhead = Layer.succeed(Interact, {
      ...interact.service,
      keepOnRead: (given) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            keep = given
          }),
          () =>
            Effect.sync(() => {
              keep = undefined
              given(unreadAtStop)
            })
        )
    })
    const brain = yield* ScriptedBrain.make(steps)
    const context = yield* Layer.build(Agent.layerWithMemory.pipe(
      Layer.provideMerge(readingAhead),
      Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: directory }, { preserveEmptyStrings: true })))
    ))
    const serving = yield* Effect.forkChild(Intake.run.pipe(Effect.provide(context)), { startImmediately: true })
    const journal = () => {
      const file = path.join(directory, ".inbox.jsonl")
      return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
    }
    const read = (...messages: ReadonlyArray<InboundMessage>) => Effect.sync(() => keep!(messages))
    return { directory, interact, brain, serving, journal, read }
  })

const accepted = (journal: string) =>
  journal.split("\n").filter((raw) => raw !== "").map((raw) => JSON.parse(raw) as { accepted?: number; text?: string })
    .filter((record) => record.accepted !== undefined).map((record) => record.text)

describe("Intake over an adapter that reads ahead", () => {
  it.effect("journals a read's messages as they are given, before the stream brings them, and answers each once", () =>
    Effect.gen(function*() {
      const t = yield* setup([text("for one"), text("for two")])
      const one = { channel: "cli", text: "one" }
      const two = { channel: "b", text: "two" }
      // A cancel is no message: not journaled (the stream's turn closes what it names).
      yield* t.read(one, { channel: "c", text: "", cancel: true }, two)
      expect(accepted(t.journal())).toEqual(["one", "two"])
      expect(t.journal().split("\n").filter((raw) => raw !== "")).toHaveLength(2)
      yield* t.interact.offer(one)
      yield* t.interact.offer(two)
      const replies = yield* Effect.forEach([1, 2], () => Queue.take(t.interact.replies))
      expect(replies.map(({ channel, text }) => [channel, text])).toEqual([["cli", "for one"], ["b", "for two"]])
      yield* t.interact.end
      yield* Fiber.join(t.serving)
      // Journaled once: nothing is left for a next start.
      expect(t.journal()).toBe("")
      expect((yield* Inbox.make(t.directory)).recovered).toEqual([])
    }))

  it.effect("leaves what was read but not taken, and what is given at the stop, for the next start", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const t = yield* setup([() => Effect.andThen(Deferred.succeed(started, undefined), Effect.never)], [{ channel: "cli", text: "unread" }])
      const running = { channel: "cli", text: "running" }
      yield* t.read(running)
      yield* t.interact.offer(running)
      yield* Deferred.await(started)
      yield* t.read({ channel: "cli", text: "read" }, { channel: "b", text: "ahead" })
      yield* Fiber.interrupt(t.serving)
      const recovered = (yield* Inbox.make(t.directory)).recovered
      expect(recovered.map(({ channel, text }) => [channel, text])).toEqual([
        ["cli", "running"],
        ["cli", "read"],
        ["b", "ahead"],
        ["cli", "unread"]
      ])
    }))
})
