/**
 * The schedule in the agent's own hands (issue 51): the model, through a
 * scripted brain, calls schedule_add ("remind me in a minute"); a minute
 * later on the TestClock the reminder is a turn like any other, marked as
 * scheduled in history, and its reply reaches the terminal, or a webhook
 * receiver on loopback as `{agent, schedule, reply}`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Latch, Layer, Queue } from "effect"
import { TestClock } from "effect/testing"
import * as Agent from "../../src/agent/Agent.js"
import * as Intake from "../../src/agent/Intake.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import { Claws } from "../../src/ports/Claws.js"
import { Interact } from "../../src/ports/Interact.js"
import * as ScheduledInteract from "../../src/schedule/ScheduledInteract.js"
import type * as ScheduleEntry from "../../src/schedule/ScheduleEntry.js"
import * as ScheduleStore from "../../src/schedule/ScheduleStore.js"
import * as ScheduleTool from "../../src/schedule/ScheduleTool.js"
import { captureLogs } from "../support/LogCapture.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import { advanceTo } from "../support/TestClockWait.js"
import { tempDir } from "../support/Sandbox.js"

const T0 = Date.parse("2026-06-01T08:00:00Z")
const SECRET = "T0KEN-not-a-real-one"

/** The schedule tools as serve and the cluster offer them: no terminal, no Discord bridge, memory only by default. */
const servedTools = (file: string, maxMessageBytes: number) =>
  ScheduleTool.withScheduleTools(InMemoryClaws.make([]), {
    store: ScheduleStore.fileStore(file),
    changed: Effect.void,
    defaultTo: "none",
    discord: false,
    terminal: false,
    maxMessageBytes
  })

/** The text of the last user message of a request (a string or the first text block). */
const lastUserText = (request: MessagesRequest): string => {
  const last = request.messages.at(-1)!
  return typeof last.content === "string" ? last.content : JSON.stringify(last.content)
}

/** The real agent over a scripted brain, with the schedule tools beside no claws and the schedule fired into its intake. */
const agentWithSchedule = (
  script: ReadonlyArray<ScriptedBrain.ScriptStep>,
  env: Record<string, string> = {},
  entries: ReadonlyArray<ScheduleEntry.Entry> = []
) =>
  Effect.gen(function*() {
    const directory = yield* tempDir()
    const file = ScheduleStore.fileIn(directory)
    if (entries.length > 0) fs.writeFileSync(file, ScheduleStore.encode(entries))
    const brain = yield* ScriptedBrain.make(script)
    const user = yield* InMemoryInteract.make
    const wake = yield* Latch.make(false)
    const claws = ScheduleTool.withScheduleTools(InMemoryClaws.make([]), {
      store: ScheduleStore.fileStore(file),
      changed: Effect.asVoid(wake.open),
      defaultTo: "terminal",
      discord: false,
      terminal: true,
      maxMessageBytes: 65_536
    })
    const scheduled = yield* ScheduledInteract.withSchedule(user.service, {
      file,
      graceMs: 600_000,
      pollMs: 3_600_000,
      maxMessageBytes: Number(env.PLANCKCLAW_MAX_MESSAGE_BYTES ?? 65_536),
      wake,
      routes: { agent: "alice", terminal: (text) => user.service.send({ channel: "cli", text }) }
    })
    const provider = ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: directory, PLANCKCLAW_MODEL: "test-model", ...env })
    const layer = Agent.layerWithMemory.pipe(
      Layer.provide(Layer.merge(ScriptedBrain.layer(brain), Layer.succeed(Claws, claws))),
      Layer.provideMerge(Layer.succeed(Interact, scheduled.interact)),
      Layer.provide(ConfigProvider.layer(provider))
    )
    yield* Intake.run.pipe(Effect.provide(layer), Effect.forkScoped)
    return { directory, file, brain, user }
  })

describe("the schedule tools, called by the model", () => {
  it.effect("'remind me in a minute': the model adds the entry, and a minute later the reminder is a turn whose reply reaches the terminal", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const { brain, directory, file, user } = yield* agentWithSchedule([
        ScriptedBrain.toolUse([{ id: "t1", name: "schedule_add", input: { text: "Remind the user to call the bank.", at: "+1m" } }]),
        (request) => {
          const result = JSON.stringify(request.messages.at(-1)!.content)
          expect(result).toContain("scheduled ")
          expect(result).toContain("at 2026-06-01T08:01:00.000Z")
          return Effect.succeed(ScriptedBrain.text("I will remind you at 08:01."))
        },
        ScriptedBrain.text("Time to call the bank!")
      ])
      yield* user.offer({ channel: "cli", text: "remind me in a minute to call the bank" })
      expect(yield* Queue.take(user.replies)).toMatchObject({ channel: "cli", text: "I will remind you at 08:01." })
      // The schedule tools were offered beside the claws.
      const [first] = yield* brain.requests
      expect(first!.tools?.map((tool) => tool.name)).toEqual(["schedule_add", "schedule_list", "schedule_remove"])
      const [entry] = yield* ScheduleStore.read(file)
      expect(entry).toMatchObject({ text: "Remind the user to call the bank.", to: "terminal", when: { _tag: "At", at: "2026-06-01T08:01:00.000Z" } })

      yield* advanceTo(T0 + 60_000)
      const reminder = yield* Queue.take(user.replies)
      expect(reminder).toEqual(expect.objectContaining({ channel: "cli", text: `[schedule ${entry!.id}] Time to call the bank!` }))
      const requests = yield* brain.requests
      expect(lastUserText(requests[2]!)).toBe(`[scheduled ${entry!.id}] Remind the user to call the bank.`)
      // A turn like any other: both exchanges in history, the scheduled one marked in its user line
      // (two keys per line, as every build reads them); the single time is done and gone.
      const history = fs.readFileSync(path.join(directory, "history.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line))
      expect(history).toEqual([
        { role: "user", content: "remind me in a minute to call the bank" },
        { role: "assistant", content: "I will remind you at 08:01." },
        { role: "user", content: `[scheduled ${entry!.id}] Remind the user to call the bank.` },
        { role: "assistant", content: "Time to call the bank!" }
      ])
      expect(yield* ScheduleStore.read(file)).toEqual([])
    }))

  it.effect("a refused request is a tool error with the reason; list and remove work on the agent's own entries", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const results: Array<string> = []
      const keep = (request: MessagesRequest) => {
        results.push(JSON.stringify(request.messages.at(-1)!.content))
      }
      const { file, user } = yield* agentWithSchedule([
        ScriptedBrain.toolUse([
          { id: "a", name: "schedule_add", input: { text: "x", at: "2020-01-01T00:00:00Z" } },
          { id: "b", name: "schedule_add", input: { text: "x", every: "1h", to: "discord:123456789012345678" } },
          { id: "c", name: "schedule_add", input: { text: "digest", cron: "0 7 * * *", tz: "Europe/Paris", to: "none" } },
          { id: "e", name: "schedule_add", input: { text: "x", every: "99999999999d" } }
        ]),
        (request) => Effect.sync(() => keep(request)).pipe(Effect.as(ScriptedBrain.toolUse([{ id: "d", name: "schedule_list", input: {} }]))),
        (request) => Effect.sync(() => keep(request)).pipe(Effect.as(ScriptedBrain.text("done")))
      ])
      yield* user.offer({ channel: "cli", text: "set things up" })
      expect((yield* Queue.take(user.replies)).text).toBe("done")
      expect(results[0]).toContain("is in the past")
      expect(results[0]).toContain("without a Discord bridge")
      expect(results[0]).toContain('bad interval \\"99999999999d\\": it is over 100 years')
      expect(results[0]).toContain('"is_error":true')
      const entries = yield* ScheduleStore.read(file)
      expect(entries).toHaveLength(1)
      const [entry] = entries
      expect(entry).toMatchObject({ text: "digest", when: { _tag: "Cron", expression: "0 7 * * *", zone: "Europe/Paris" } })
      expect(results[1]).toContain("now: 2026-06-01T08:00:00.000Z")
      expect(results[1]).toContain(`${entry!.id}: cron \\"0 7 * * *\\" (Europe/Paris), next 2026-06-02T05:00:00.000Z`)
    }))

  it.effect("an entry an older build stored, whose next run no date can hold: each tool answers the refusal with the entry and why", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const file = ScheduleStore.fileIn(yield* tempDir())
      fs.writeFileSync(file, JSON.stringify({ entries: [
        { id: "big", when: { _tag: "Every", seconds: 8_639_999_999_913_600 }, text: "x", to: "none", created: new Date(T0).toISOString() }
      ] }))
      const claws = servedTools(file, 65_536)
      const refusal = { isError: true, content: expect.stringContaining("entry big: every 8639999999913600 s is over 100 years") }
      expect(yield* claws.call("schedule_list", {})).toEqual(refusal)
      expect(yield* claws.call("schedule_add", { text: "x", every: "5m" })).toEqual(refusal)
      expect(yield* claws.call("schedule_remove", { id: "big" })).toEqual(refusal)
    }))

  it.effect("under serve: to terminal and tz with every are tool errors saying what to use instead, and nothing is stored", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const file = ScheduleStore.fileIn(yield* tempDir())
      const claws = servedTools(file, 65_536)
      expect(yield* claws.call("schedule_add", { text: "remind me", at: "+10m", to: "terminal" })).toEqual({
        isError: true,
        content: "terminal: this agent has no terminal to print the reply on: use to webhook:URL or none (memory only)"
      })
      expect(yield* claws.call("schedule_add", { text: "check the build", every: "1h", tz: "Europe/Paris" })).toEqual({
        isError: true,
        content: "tz goes with cron or a wall-clock at, not every (an interval counts from now, whatever the zone): leave tz out, or use cron with tz"
      })
      expect(fs.existsSync(file)).toBe(false)
      expect(yield* claws.call("schedule_add", { text: "check the build", every: "1h" })).toMatchObject({ isError: false })
      expect(yield* ScheduleStore.read(file)).toMatchObject([{ to: "none", when: { _tag: "Every", seconds: 3600 } }])
    }))

  it.effect("a message over the agent's PLANCKCLAW_MAX_MESSAGE_BYTES is a tool error saying the limit, not an entry refused at every firing", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const file = ScheduleStore.fileIn(yield* tempDir())
      const claws = servedTools(file, 100)
      expect(yield* claws.call("schedule_add", { text: "x".repeat(100), every: "1h" })).toEqual({
        isError: true,
        content: expect.stringMatching(/^the message is 100 bytes; the agent takes at most 100 \(PLANCKCLAW_MAX_MESSAGE_BYTES\), .*write at most 79 bytes$/)
      })
      expect(fs.existsSync(file)).toBe(false)
      expect(yield* claws.call("schedule_add", { text: "x".repeat(79), every: "1h" })).toMatchObject({ isError: false })
    }))

  it.effect("a firing refused as too large is logged with its webhook as scheme and host, never the token in the URL's path", () =>
    Effect.gen(function*() {
      const receiver = yield* LoopbackHttp.serve(() => LoopbackHttp.respond(204, ""), (raw) => JSON.parse(raw) as unknown)
      const logs = yield* captureLogs
      yield* TestClock.setTime(T0)
      // Written by hand (or before the limit was lowered): `add` refuses such an entry now.
      yield* agentWithSchedule([], { PLANCKCLAW_MAX_MESSAGE_BYTES: "40" }, [{
        id: "big1", when: { _tag: "Every", seconds: 30 }, text: "x".repeat(40), to: `webhook:http://127.0.0.1:${receiver.port}/services/${SECRET}`,
        created: new Date(T0).toISOString()
      }]).pipe(Effect.provide(logs.layer))
      yield* advanceTo(T0 + 30_000)
      const [posted] = yield* receiver.awaitRequests(1)
      expect(posted!.body).toMatchObject({ schedule: "big1", reply: expect.stringContaining("the limit is 40 bytes") })
      expect(logs.lines.filter((line) => line.includes("byte message"))).toEqual([
        `WARN rejected a 57-byte message from schedule/big1@${new Date(T0 + 30_000).toISOString()}/webhook:http://127.0.0.1:${receiver.port}/…`
      ])
      expect(logs.lines.join("\n")).not.toContain(SECRET)
    }))

  it.effect("a reminder whose destination is a webhook is POSTed to a receiver on loopback as {agent, schedule, reply}", () =>
    Effect.gen(function*() {
      const receiver = yield* LoopbackHttp.serve(() => LoopbackHttp.respond(204, ""), (raw) => JSON.parse(raw) as unknown)
      const hook = `webhook:http://127.0.0.1:${receiver.port}/hook`
      yield* TestClock.setTime(T0)
      const { file, user } = yield* agentWithSchedule([
        ScriptedBrain.toolUse([{ id: "t1", name: "schedule_add", input: { text: "Check the build.", every: "30s", to: hook } }]),
        ScriptedBrain.text("Will do."),
        ScriptedBrain.text("The build is green.")
      ])
      yield* user.offer({ channel: "cli", text: "check the build every 30 seconds" })
      expect((yield* Queue.take(user.replies)).text).toBe("Will do.")
      const [entry] = yield* ScheduleStore.read(file)
      yield* advanceTo(T0 + 30_000)
      const [posted] = yield* receiver.awaitRequests(1)
      expect(posted!.method).toBe("POST")
      expect(posted!.path).toBe("/hook")
      expect(posted!.headers["content-type"]).toContain("application/json")
      expect(posted!.body).toEqual({ agent: "alice", schedule: entry!.id, reply: "The build is green." })
    }))
})
