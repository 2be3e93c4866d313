/**
 * A cancel on the interact stream (what a Ctrl-C on the terminal sends):
 * the turn running for that channel is interrupted (the brain's request, a
 * tool call), its messages queued behind it are cancelled too, each is
 * answered CANCELLED, none is stored, and a restart does not answer them.
 * Another channel's message is answered as usual, and so is the next one.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect, Fiber, Layer, Queue } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import * as Intake from "../../src/agent/Intake.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import { text, toolUse } from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import * as Inbox from "../../src/memory/Inbox.js"
import { CANCELLED, cancelFor } from "../../src/ports/Interact.js"
import { tempDir } from "../support/Sandbox.js"

const setup = (steps: ReadonlyArray<ScriptedBrain.ScriptStep>, tools: ReadonlyArray<InMemoryClaws.InMemoryTool> = []) =>
  Effect.gen(function*() {
    const directory = yield* tempDir("planckclaw-cancel-")
    const interact = yield* InMemoryInteract.make
    const brain = yield* ScriptedBrain.make(steps)
    const context = yield* Layer.build(Agent.layerWithMemory.pipe(
      Layer.provideMerge(InMemoryInteract.layer(interact)),
      Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer(tools))),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: directory }, { preserveEmptyStrings: true })))
    ))
    const serving = yield* Effect.forkChild(Intake.run.pipe(Effect.provide(context)))
    const history = () => {
      const file = path.join(directory, "history.jsonl")
      return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
    }
    return { directory, interact, brain, serving, history }
  })

/** A step that says it started, then holds until interrupted, and says that too. */
const held = (started: Deferred.Deferred<void>, aborted: Deferred.Deferred<void>) => () =>
  Effect.andThen(Deferred.succeed(started, undefined), Effect.never).pipe(
    Effect.onInterrupt(() => Deferred.succeed(aborted, undefined))
  )

describe("a cancel from a channel", () => {
  it.effect("interrupts its running turn, cancels its queued messages, stores none, and the next is answered", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const aborted = yield* Deferred.make<void>()
      const t = yield* setup([held(started, aborted), text("for b"), text("for two")])
      yield* t.interact.offer({ channel: "cli", text: "one" })
      yield* t.interact.offer({ channel: "cli", text: "queued" })
      yield* t.interact.offer({ channel: "b", text: "other" })
      yield* Deferred.await(started)
      yield* t.interact.offer(cancelFor("cli"))
      yield* Deferred.await(aborted)
      const first = yield* Effect.forEach([1, 2, 3], () => Queue.take(t.interact.replies))
      expect(first.map(({ channel, text }) => [channel, text])).toEqual([
        ["cli", CANCELLED],
        ["cli", CANCELLED],
        ["b", "for b"]
      ])
      yield* t.interact.offer({ channel: "cli", text: "two" })
      expect((yield* Queue.take(t.interact.replies)).text).toBe("for two")
      yield* t.interact.end
      yield* Fiber.join(t.serving)
      expect(t.history()).not.toContain("one")
      expect(t.history()).not.toContain("queued")
      expect(t.history()).toContain("for two")
      // Three turns asked the brain: the queued message never reached it.
      expect((yield* t.brain.requests).length).toBe(3)
      const restarted = yield* Inbox.make(t.directory)
      expect(restarted.recovered).toEqual([])
    }))

  it.effect("interrupts a tool call running when it comes", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const killed = yield* Deferred.make<void>()
      const slow: InMemoryClaws.InMemoryTool = {
        definition: { name: "slow", description: "takes its time", input_schema: { type: "object", properties: {} } },
        run: held(started, killed)
      }
      const t = yield* setup([toolUse([{ id: "t1", name: "slow", input: {} }]), text("after")], [slow])
      yield* t.interact.offer({ channel: "cli", text: "use the tool" })
      yield* Deferred.await(started)
      yield* t.interact.offer(cancelFor("cli"))
      yield* Deferred.await(killed)
      expect((yield* Queue.take(t.interact.replies)).text).toBe(CANCELLED)
      yield* t.interact.end
      yield* Fiber.join(t.serving)
      expect(t.history()).toBe("")
      expect((yield* t.brain.requests).length).toBe(1)
    }))

  it.effect("leaves another channel's running turn alone", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const t = yield* setup([() => Effect.andThen(Deferred.succeed(started, undefined), Effect.as(Deferred.await(release), text("kept")))])
      yield* t.interact.offer({ channel: "b", text: "mine" })
      yield* Deferred.await(started)
      yield* t.interact.offer(cancelFor("cli"))
      yield* Deferred.succeed(release, undefined)
      expect((yield* Queue.take(t.interact.replies)).text).toBe("kept")
      yield* t.interact.end
      yield* Fiber.join(t.serving)
      expect(t.history()).toContain("kept")
    }))
})
