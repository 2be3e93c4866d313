/**
 * `serve` fires the schedules of its agents (issue 51): each agent directory
 * with a schedules.json gets its runner; a firing is a message through the
 * host (a turn in that agent's history), its reply POSTed to a webhook
 * receiver on loopback as {agent, schedule, reply}. TestClock.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { TestClock } from "effect/testing"
import * as AgentHost from "../../src/hosts/serve/AgentHost.js"
import * as ServeSchedules from "../../src/hosts/serve/ServeSchedules.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import { echoBrain, historyOf, settings, startHost, tempDir } from "../hosts/serve/Kit.js"
import * as FakeDiscord from "../support/FakeDiscord.js"
import { captureLogs } from "../support/LogCapture.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import { advanceTo, letArrive, yieldToEventLoop } from "../support/TestClockWait.js"

const T0 = Date.parse("2026-06-01T08:00:00Z")
const HOUR = 3_600_000

describe("serve's schedules", () => {
  it.effect("each agent's entries fire through the host at their instants; a webhook gets the reply", () =>
    Effect.gen(function*() {
      const receiver = yield* LoopbackHttp.serve(() => LoopbackHttp.respond(204, ""), (raw) => JSON.parse(raw) as unknown)
      const root = tempDir()
      const created = new Date(T0).toISOString()
      const agent = (id: string, entries: ReadonlyArray<unknown>) => {
        fs.mkdirSync(path.join(root, "agents", id), { recursive: true })
        fs.writeFileSync(path.join(root, "agents", id, "schedules.json"), JSON.stringify({ entries }))
      }
      agent("alice", [{ id: "a1", when: { _tag: "Every", seconds: 60 }, text: "check the build", to: `webhook:http://127.0.0.1:${receiver.port}/h`, created }])
      agent("bob", [{ id: "b1", when: { _tag: "At", at: new Date(T0 + 90_000).toISOString() }, text: "call the bank", to: "none", created }])
      yield* TestClock.setTime(T0)
      const host = yield* startHost(root, echoBrain().layer)
      yield* Effect.forkScoped(ServeSchedules.run({ pollMs: HOUR }).pipe(Effect.provideService(AgentHost.AgentHost, host)))
      yield* advanceTo(T0 + 60_000)
      const [posted] = yield* receiver.awaitRequests(1)
      expect(posted!.body).toEqual({ agent: "alice", schedule: "a1", reply: "echo [scheduled a1] check the build" })
      expect(historyOf(root, "alice")).toEqual([
        { role: "user", content: "[scheduled a1] check the build" },
        { role: "assistant", content: "echo [scheduled a1] check the build" }
      ])
      yield* advanceTo(T0 + 90_000)
      // Bob's reply stays in memory; the single time is done.
      while (historyOf(root, "bob").length < 2) yield* yieldToEventLoop
      expect(historyOf(root, "bob")[0]).toEqual({ role: "user", content: "[scheduled b1] call the bank" })
      expect(JSON.parse(fs.readFileSync(path.join(root, "agents", "bob", "schedules.json"), "utf8")).entries).toEqual([])
    }))

  it.effect("an entry over its agent's own PLANCKCLAW_MAX_MESSAGE_BYTES (config.env) is warned of when its file is read, naming the agent's limit", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const created = new Date(T0).toISOString()
      fs.mkdirSync(path.join(root, "agents", "alice"), { recursive: true })
      fs.writeFileSync(path.join(root, "agents", "alice", "config.env"), "PLANCKCLAW_MAX_MESSAGE_BYTES=50\n")
      fs.writeFileSync(path.join(root, "agents", "alice", "schedules.json"), JSON.stringify({ entries: [
        { id: "big1", when: { _tag: "Every", seconds: 3600 }, text: "x".repeat(40), to: "none", created },
        { id: "ok1", when: { _tag: "Every", seconds: 3600 }, text: "x".repeat(33), to: "none", created }
      ] }))
      yield* TestClock.setTime(T0)
      const logs = yield* captureLogs
      const host = yield* startHost(root, echoBrain().layer)
      yield* Effect.forkScoped(ServeSchedules.run({ pollMs: HOUR }).pipe(Effect.provideService(AgentHost.AgentHost, host), Effect.provide(logs.layer)))
      while (!logs.lines.some((line) => line.includes("big1"))) yield* yieldToEventLoop
      expect(logs.lines.filter((line) => line.includes("PLANCKCLAW_MAX_MESSAGE_BYTES"))).toEqual([
        `WARN schedule big1: the message is 40 bytes; the agent takes at most 50 (PLANCKCLAW_MAX_MESSAGE_BYTES), the 17 bytes of its mark ` +
        `"[scheduled big1] " included, so it would be refused at every firing: write at most 33 bytes; the other entries fire as usual`
      ])
    }))

  it.effect("an agent of serve schedules its own reminder with the tool; serve fires it", () =>
    Effect.gen(function*() {
      const receiver = yield* LoopbackHttp.serve(() => LoopbackHttp.respond(204, ""), (raw) => JSON.parse(raw) as unknown)
      const root = tempDir()
      const hook = `webhook:http://127.0.0.1:${receiver.port}/h`
      yield* TestClock.setTime(T0)
      const brain = echoBrain((request) => {
        const last = request.messages.at(-1)!
        if (typeof last.content === "string" && last.content === "check the build every 30 seconds") {
          return Effect.succeed(ScriptedBrain.toolUse([{ id: "t1", name: "schedule_add", input: { text: "Check the build.", every: "30s", to: hook } }]))
        }
        return typeof last.content === "string" ? undefined : Effect.succeed(ScriptedBrain.text("Scheduled."))
      })
      const host = yield* startHost(root, brain.layer)
      yield* Effect.forkScoped(ServeSchedules.run({ pollMs: 10_000 }).pipe(Effect.provideService(AgentHost.AgentHost, host)))
      expect((yield* host.send("carol", { text: "check the build every 30 seconds" })).reply).toBe("Scheduled.")
      const entries = JSON.parse(fs.readFileSync(path.join(root, "agents", "carol", "schedules.json"), "utf8")).entries
      expect(entries).toMatchObject([{ text: "Check the build.", to: hook, when: { _tag: "Every", seconds: 30 } }])
      for (const at of [10_000, 20_000, 30_000]) yield* advanceTo(T0 + at)
      const [posted] = yield* receiver.awaitRequests(1)
      expect(posted!.body).toEqual({ agent: "carol", schedule: entries[0].id, reply: "echo [scheduled " + entries[0].id + "] Check the build." })
    }))

  it.effect("the tool refuses a message over the agent's own PLANCKCLAW_MAX_MESSAGE_BYTES (its config.env's, lower than the host's), saying the limit", () =>
    Effect.gen(function*() {
      const root = tempDir()
      fs.mkdirSync(path.join(root, "agents", "fay"), { recursive: true })
      fs.writeFileSync(path.join(root, "agents", "fay", "config.env"), "PLANCKCLAW_MAX_MESSAGE_BYTES=60\n")
      yield* TestClock.setTime(T0)
      const brain = echoBrain((request) => {
        const last = request.messages.at(-1)!
        if (typeof last.content === "string") {
          return Effect.succeed(ScriptedBrain.toolUse([{ id: "t1", name: "schedule_add", input: { text: "x".repeat(40), every: "1h" } }]))
        }
        return Effect.succeed(ScriptedBrain.text(JSON.stringify(last.content)))
      })
      const host = yield* startHost(root, brain.layer)
      const reply = (yield* host.send("fay", { text: "remind me every hour" })).reply
      expect(reply).toContain("the message is 40 bytes; the agent takes at most 60 (PLANCKCLAW_MAX_MESSAGE_BYTES)")
      expect(reply).toContain('"is_error":true')
      expect(fs.existsSync(path.join(root, "agents", "fay", "schedules.json"))).toBe(false)
    }))

  it.live("a reply to discord:CHANNEL is posted in the channel over Discord's REST API with the bot's token", () =>
    Effect.gen(function*() {
      const channel = "200000000000000001"
      const fake = yield* FakeDiscord.make({ token: "test-bot-token", botUserId: "100000000000000001", guildId: "400000000000000001", channelIds: [channel] })
      const root = tempDir()
      fs.mkdirSync(path.join(root, "agents", "dan"), { recursive: true })
      // Hourly, made an hour and two seconds ago: its run two seconds ago fires at start (grace).
      const created = new Date(Date.now() - HOUR - 2000).toISOString()
      fs.writeFileSync(path.join(root, "agents", "dan", "schedules.json"), JSON.stringify({
        entries: [{ id: "d1", when: { _tag: "Every", seconds: 3600 }, text: "morning digest", to: `discord:${channel}`, created }]
      }))
      const host = yield* startHost(root, echoBrain().layer)
      yield* Effect.forkScoped(ServeSchedules.run({ pollMs: HOUR }).pipe(
        Effect.provideService(AgentHost.AgentHost, host),
        Effect.provide(settings({ DISCORD_BOT_TOKEN: "test-bot-token", DISCORD_API_URL: fake.apiUrl }))
      ))
      const posted = yield* fake.waitFor(() =>
        fake.rest().find((record) => record.method === "POST" && record.path === `/api/v10/channels/${channel}/messages`))
      expect((posted.body as { content: string }).content).toBe("echo [scheduled d1] morning digest")
      expect(posted.authorization).toBe("Bot test-bot-token")
    }))
  it.effect("an entry still being answered (a slow or unreachable model) skips its next runs, said each time; no backlog piles up", () =>
    Effect.gen(function*() {
      const root = tempDir()
      fs.mkdirSync(path.join(root, "agents", "erin"), { recursive: true })
      fs.writeFileSync(path.join(root, "agents", "erin", "schedules.json"), JSON.stringify({
        entries: [{ id: "e1", when: { _tag: "Every", seconds: 60 }, text: "check the build", to: "none", created: new Date(T0).toISOString() }]
      }))
      yield* TestClock.setTime(T0)
      // The model answers the first scheduled turn only once the gate opens (an outage), the later ones at once.
      const gate = yield* Deferred.make<void>()
      const brain = echoBrain((request) => request.messages.length === 1 ? Deferred.await(gate).pipe(Effect.andThen(Effect.succeed(ScriptedBrain.text("late")))) : undefined)
      const host = yield* startHost(root, brain.layer)
      const logs = yield* captureLogs
      yield* Effect.forkScoped(ServeSchedules.run({ pollMs: HOUR }).pipe(Effect.provideService(AgentHost.AgentHost, host), Effect.provide(logs.layer)))
      for (let minute = 1; minute <= 5; minute++) yield* advanceTo(T0 + minute * 60_000)
      yield* Deferred.succeed(gate, undefined)
      while (historyOf(root, "erin").length < 2) yield* yieldToEventLoop
      yield* advanceTo(T0 + 6 * 60_000)
      while (historyOf(root, "erin").length < 4) yield* yieldToEventLoop
      yield* letArrive
      // The runs at minutes 2 to 5 came while the first was being answered: skipped, not queued behind it.
      expect(historyOf(root, "erin").map((line) => line.content)).toEqual([
        "[scheduled e1] check the build", "late", "[scheduled e1] check the build", "echo [scheduled e1] check the build"
      ])
      expect(logs.lines.filter((line) => line.includes("still being answered"))).toEqual([2, 3, 4, 5].map((minute) =>
        `WARN schedule e1 of agent erin: its run at ${new Date(T0 + 60_000).toISOString()} is still being answered: ` +
        `its run at ${new Date(T0 + minute * 60_000).toISOString()} is skipped`
      ))
    }))
})
