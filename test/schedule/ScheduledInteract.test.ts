/**
 * `run`'s schedule beside its bridge (ScheduledInteract), under the
 * TestClock: an entry whose firing is not answered yet (a model slower
 * than the entry, or unreachable for hours) skips its next occurrences,
 * each said on standard error, rather than queueing them to be answered in
 * a burst; once its reply is delivered, it fires again at its next one. A
 * firing the agent could not journal (an internal error) is answered with
 * the apology, so the entry is not held back for ever. The reply to a
 * firing recovered after a restart does not end the newer firing's turn.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Agent from "../../src/agent/Agent.js"
import * as Intake from "../../src/agent/Intake.js"
import { APOLOGY } from "../../src/agent/Turn.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import { Inbox } from "../../src/memory/Inbox.js"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import { Claws } from "../../src/ports/Claws.js"
import { type InboundMessage, Interact } from "../../src/ports/Interact.js"
import * as ScheduledInteract from "../../src/schedule/ScheduledInteract.js"
import * as ScheduleStore from "../../src/schedule/ScheduleStore.js"
import { captureLogs } from "../support/LogCapture.js"
import { tempDir } from "../support/Sandbox.js"
import { advanceTo, letArrive } from "../support/TestClockWait.js"

const T0 = Date.parse("2026-06-01T08:00:00Z")
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * run's schedule of `entries`, from T0, beside an in-memory bridge: the file, the interact the agent reads,
 * the messages fired into it, and the logs.
 */
const besideBridge = (
  entries: ReadonlyArray<object>,
  options: { readonly pollMs?: number; readonly maxMessageBytes?: number } = {}
) =>
  Effect.gen(function*() {
    const file = ScheduleStore.fileIn(yield* tempDir())
    fs.writeFileSync(file, JSON.stringify({ entries }))
    yield* TestClock.setTime(T0)
    const logs = yield* captureLogs
    const user = yield* InMemoryInteract.make
    const { interact } = yield* ScheduledInteract.withSchedule(user.service, {
      file,
      graceMs: 600_000,
      pollMs: options.pollMs ?? 3_600_000,
      maxMessageBytes: options.maxMessageBytes ?? 65_536,
      routes: { agent: "run" }
    }).pipe(Effect.provide(logs.layer))
    const received: Array<InboundMessage> = []
    yield* Effect.forkScoped(Stream.runForEach(interact.messages, (message) => Effect.sync(() => void received.push(message))))
    return { file, interact, logs, received }
  })

describe("run's schedule beside its bridge", () => {
  it.effect("an entry not answered yet skips its next runs, said each time; answered, it fires at its next one", () =>
    Effect.gen(function*() {
      const { file, interact, logs, received } = yield* besideBridge([{ id: "m1", when: { _tag: "Every", seconds: 60 }, text: "check the build", to: "none", created: iso(T0) }])
      for (let minute = 1; minute <= 5; minute++) yield* advanceTo(T0 + minute * 60_000)
      // The agent has not answered the run at minute 1: the four after it are skipped, not queued.
      const firstRun = `schedule/m1@${iso(T0 + 60_000)}/none`
      expect(received).toEqual([{ channel: firstRun, text: "[scheduled m1] check the build" }])
      expect(logs.lines.filter((line) => line.includes("still being answered"))).toEqual([2, 3, 4, 5].map((minute) =>
        `WARN schedule m1: its run at ${iso(T0 + 60_000)} is still being answered: its run at ${iso(T0 + minute * 60_000)} is skipped`
      ))
      yield* interact.send({ channel: firstRun, text: "the build is green" })
      yield* advanceTo(T0 + 6 * 60_000)
      expect(received).toHaveLength(2)
      expect(JSON.parse(fs.readFileSync(file, "utf8")).entries[0].lastRun).toBe(iso(T0 + 6 * 60_000))
    }))

  it.effect("a firing the agent could not journal (an internal error) is answered with the apology, and the entry fires at its next run", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const file = ScheduleStore.fileIn(directory)
      fs.writeFileSync(file, JSON.stringify({
        entries: [{ id: "m1", when: { _tag: "Every", seconds: 60 }, text: "check the build", to: "terminal", created: iso(T0) }]
      }))
      yield* TestClock.setTime(T0)
      const logs = yield* captureLogs
      const asked: Array<string> = []
      const answer = (request: MessagesRequest) =>
        Effect.sync(() => void asked.push(JSON.stringify(request.messages.at(-1)!.content))).pipe(Effect.as(ScriptedBrain.text("the build is green")))
      const brain = yield* ScriptedBrain.make([answer, answer])
      const user = yield* InMemoryInteract.make
      const { interact } = yield* ScheduledInteract.withSchedule(user.service, {
        file,
        graceMs: 600_000,
        pollMs: 3_600_000,
        maxMessageBytes: 65_536,
        routes: { agent: "run", terminal: (text) => user.service.send({ channel: "cli", text }) }
      }).pipe(Effect.provide(logs.layer))
      const layer = Agent.layerWithMemory.pipe(
        Layer.provide(Layer.merge(ScriptedBrain.layer(brain), Layer.succeed(Claws, InMemoryClaws.make([])))),
        Layer.provideMerge(Layer.succeed(Interact, interact)),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: directory, PLANCKCLAW_MODEL: "test-model" })))
      )
      // The journal's first write dies (a bug): the firing at minute 1 is read but never journaled.
      let broken = false
      const faulty = Effect.map(Effect.service(Inbox), (inbox) => ({
        ...inbox,
        accept: (message: Parameters<typeof inbox.accept>[0]) =>
          broken ? inbox.accept(message) : Effect.suspend(() => {
            broken = true
            return Effect.die(new Error("a bug journaling it"))
          })
      }))
      yield* Intake.run.pipe(Effect.provideServiceEffect(Inbox, faulty), Effect.provide(layer), Effect.provide(logs.layer), Effect.forkScoped)
      yield* advanceTo(T0 + 60_000)
      yield* letArrive
      expect(yield* Queue.clear(user.replies)).toMatchObject([{ channel: "cli", text: `[schedule m1] ${APOLOGY}` }])
      expect(asked).toEqual([])
      yield* advanceTo(T0 + 120_000)
      expect(yield* Queue.take(user.replies)).toMatchObject({ channel: "cli", text: "[schedule m1] the build is green" })
      expect(asked).toEqual([JSON.stringify("[scheduled m1] check the build")])
      expect(logs.lines.filter((line) => line.includes("still being answered"))).toEqual([])
      expect(logs.lines.filter((line) => line.includes("could not journal"))).toEqual([
        `ERROR could not journal a message from channel schedule/m1@${iso(T0 + 60_000)}/terminal (an internal error): it is answered with the apology Error: a bug journaling it`
      ])
    }))

  it.effect("the reply to a firing recovered after a restart leaves the newer firing being answered: its next run is still skipped", () =>
    Effect.gen(function*() {
      const { interact, logs, received } = yield* besideBridge([{ id: "m1", when: { _tag: "Every", seconds: 60 }, text: "check the build", to: "none", created: iso(T0) }])
      yield* advanceTo(T0 + 60_000)
      expect(received.map((message) => message.channel)).toEqual([`schedule/m1@${iso(T0 + 60_000)}/none`])
      // The previous run's firings, journaled before it stopped, answered by the agent first: one of this
      // build (an earlier occurrence named) and one of an older build (none named).
      yield* interact.send({ channel: `schedule/m1@${iso(T0)}/none`, text: "the build was green" })
      yield* interact.send({ channel: "schedule/m1/none", text: "the build was green" })
      yield* advanceTo(T0 + 120_000)
      expect(received).toHaveLength(1)
      expect(logs.lines.filter((line) => line.includes("still being answered"))).toEqual([
        `WARN schedule m1: its run at ${iso(T0 + 60_000)} is still being answered: its run at ${iso(T0 + 120_000)} is skipped`
      ])
      // Its own reply ends it: the entry fires at its next run.
      yield* interact.send({ channel: `schedule/m1@${iso(T0 + 60_000)}/none`, text: "the build is green" })
      yield* advanceTo(T0 + 180_000)
      expect(received.map((message) => message.channel)).toEqual([`schedule/m1@${iso(T0 + 60_000)}/none`, `schedule/m1@${iso(T0 + 180_000)}/none`])
    }))

  it.effect("an entry whose message is over PLANCKCLAW_MAX_MESSAGE_BYTES (written by hand) is warned of when the file is read, once; the others fire", () =>
    Effect.gen(function*() {
      const created = iso(T0)
      const { logs, received } = yield* besideBridge([
        { id: "big1", when: { _tag: "Every", seconds: 3600 }, text: "x".repeat(40), to: "none", created },
        { id: "ok1", when: { _tag: "Every", seconds: 60 }, text: "check the build", to: "none", created }
      ], { pollMs: 2_000, maxMessageBytes: 40 })
      const warned = [
        `WARN schedule big1: the message is 40 bytes; the agent takes at most 40 (PLANCKCLAW_MAX_MESSAGE_BYTES), the 17 bytes of its mark ` +
        `"[scheduled big1] " included, so it would be refused at every firing: write at most 23 bytes; the other entries fire as usual`
      ]
      // At load, an hour before its first firing; not again at each look at the file.
      yield* advanceTo(T0 + 2_000)
      expect(logs.lines.filter((line) => line.includes("big1"))).toEqual(warned)
      for (let look = 2; look <= 30; look++) yield* advanceTo(T0 + look * 2_000)
      expect(logs.lines.filter((line) => line.includes("big1"))).toEqual(warned)
      expect(received.map((message) => message.text)).toEqual(["[scheduled ok1] check the build"])
    }))
})
