/**
 * Firing an agent's schedule under the TestClock (issue 51): cron, interval
 * and single-time entries fire at their instants across a day and New
 * York's change to daylight-saving time; after a restart, a miss within the
 * grace period fires once at start, older misses are skipped and logged,
 * never a burst; a clock set back after it ran ahead does not stop an entry
 * until it catches up.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import type { Entry } from "../../src/schedule/ScheduleEntry.js"
import * as ScheduleRunner from "../../src/schedule/ScheduleRunner.js"
import * as ScheduleStore from "../../src/schedule/ScheduleStore.js"
import { captureLogs } from "../support/LogCapture.js"
import { tempDir } from "../support/Sandbox.js"

const T0 = Date.parse("2026-03-07T12:00:00Z")
const iso = (ms: number) => new Date(ms).toISOString()
const HOUR = 3_600_000

interface Firing {
  readonly id: string
  readonly occurrence: string
  readonly clock: string
}

/** A runner on `file` whose firings are kept in `fired`, with the clock's time at each. */
const runner = (file: string, fired: Array<Firing>, graceMs = 10 * 60_000) =>
  ScheduleRunner.make({
    store: ScheduleRunner.fromStore(ScheduleStore.fileStore(file)),
    graceMs,
    pollMs: HOUR,
    fire: (entry, occurrenceMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        fired.push({ id: entry.id, occurrence: iso(occurrenceMs), clock: iso(now) })
      })
  })

const write = (file: string, entries: ReadonlyArray<Entry>) => fs.writeFileSync(file, JSON.stringify({ entries }))

describe("the schedule runner", () => {
  it.effect("fires cron, interval and single-time entries at their instants across a day and a daylight-saving change", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      const created = iso(T0)
      write(file, [
        { id: "morning", when: { _tag: "Cron", expression: "0 9 * * *", zone: "America/New_York" }, text: "digest", to: "none", created },
        { id: "sixhours", when: { _tag: "Every", seconds: 6 * 3600 }, text: "check", to: "none", created },
        { id: "once", when: { _tag: "At", at: "2026-03-07T20:30:00.000Z" }, text: "call the bank", to: "none", created }
      ])
      yield* TestClock.setTime(T0)
      const fired: Array<Firing> = []
      const { run } = yield* runner(file, fired)
      const fiber = yield* Effect.forkChild(run)
      yield* TestClock.adjust(Duration.hours(30))
      yield* Fiber.interrupt(fiber)
      expect(fired).toEqual([
        // 09:00 EST is 14:00 UTC; after the change on 8 March, 09:00 EDT is 13:00 UTC.
        { id: "morning", occurrence: "2026-03-07T14:00:00.000Z", clock: "2026-03-07T14:00:00.000Z" },
        { id: "sixhours", occurrence: "2026-03-07T18:00:00.000Z", clock: "2026-03-07T18:00:00.000Z" },
        { id: "once", occurrence: "2026-03-07T20:30:00.000Z", clock: "2026-03-07T20:30:00.000Z" },
        { id: "sixhours", occurrence: "2026-03-08T00:00:00.000Z", clock: "2026-03-08T00:00:00.000Z" },
        { id: "sixhours", occurrence: "2026-03-08T06:00:00.000Z", clock: "2026-03-08T06:00:00.000Z" },
        { id: "sixhours", occurrence: "2026-03-08T12:00:00.000Z", clock: "2026-03-08T12:00:00.000Z" },
        { id: "morning", occurrence: "2026-03-08T13:00:00.000Z", clock: "2026-03-08T13:00:00.000Z" },
        { id: "sixhours", occurrence: "2026-03-08T18:00:00.000Z", clock: "2026-03-08T18:00:00.000Z" }
      ])
      // The single time is done and gone; the others remember their last run.
      const left = yield* ScheduleStore.read(file)
      expect(left.map((entry) => [entry.id, entry.lastRun])).toEqual([
        ["morning", "2026-03-08T13:00:00.000Z"],
        ["sixhours", "2026-03-08T18:00:00.000Z"]
      ])
    }))

  it.effect("an entry added while it sleeps fires at its time once the runner is told of the change", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      yield* TestClock.setTime(T0)
      const fired: Array<Firing> = []
      const { changed, run } = yield* runner(file, fired)
      const fiber = yield* Effect.forkChild(run)
      yield* TestClock.adjust(Duration.minutes(1))
      const entry = yield* ScheduleStore.add(file, { when: { _tag: "Every", seconds: 5 }, text: "tick", to: "none" }, T0 + 60_000, 65_536)
      yield* changed
      yield* TestClock.adjust(Duration.seconds(12))
      yield* Fiber.interrupt(fiber)
      expect(fired.map((firing) => firing.clock)).toEqual([iso(T0 + 65_000), iso(T0 + 70_000)])
      expect(fired.every((firing) => firing.id === entry.id)).toBe(true)
    }))

  it.effect("after a restart: a miss within the grace period fires once at start, older misses are skipped and logged", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      const created = iso(T0)
      write(file, [
        { id: "minutely", when: { _tag: "Every", seconds: 60 }, text: "tick", to: "none", created },
        { id: "hourly", when: { _tag: "Cron", expression: "30 * * * *", zone: "UTC" }, text: "hour", to: "none", created },
        { id: "once", when: { _tag: "At", at: iso(T0 + 3 * 60_000) }, text: "soon", to: "none", created }
      ])
      const logs = yield* captureLogs
      yield* TestClock.setTime(T0)
      const fired: Array<Firing> = []
      const first = yield* Effect.forkChild((yield* runner(file, fired)).run)
      yield* TestClock.adjust(Duration.minutes(2))
      yield* Fiber.interrupt(first)
      expect(fired.map((firing) => firing.clock)).toEqual([iso(T0 + 60_000), iso(T0 + 120_000)])
      fired.length = 0
      // Down from 12:02 to 12:45: the minutely entry missed 41 runs, the last 0 s ago; the single
      // time (12:03) and the hourly one (12:30) are older than the 10 minutes of grace.
      yield* TestClock.adjust(Duration.minutes(43))
      expect(fired).toEqual([])
      const second = yield* Effect.forkChild(Effect.provide((yield* runner(file, fired)).run, logs.layer))
      yield* TestClock.adjust(Duration.seconds(30))
      expect(fired).toEqual([{ id: "minutely", occurrence: iso(T0 + 45 * 60_000), clock: iso(T0 + 45 * 60_000) }])
      yield* TestClock.adjust(Duration.seconds(30))
      // Then on as usual: the next minute, once.
      expect(fired.map((firing) => firing.occurrence)).toEqual([iso(T0 + 45 * 60_000), iso(T0 + 46 * 60_000)])
      yield* Fiber.interrupt(second)
      const skipped = logs.lines.filter((line) => line.includes("skipped"))
      expect(skipped).toEqual([
        "WARN schedule hourly: missed its run at 2026-03-07T12:30:00.000Z, older than the grace period (600 s, PLANCKCLAW_SCHEDULE_GRACE): skipped",
        "WARN schedule once: missed its run at 2026-03-07T12:03:00.000Z, older than the grace period (600 s, PLANCKCLAW_SCHEDULE_GRACE): skipped"
      ])
      // The skipped single time is gone; the hourly entry waits for 13:30.
      const left = yield* ScheduleStore.read(file)
      expect(left.map((entry) => [entry.id, entry.lastRun])).toEqual([
        ["minutely", iso(T0 + 46 * 60_000)],
        ["hourly", "2026-03-07T12:30:00.000Z"]
      ])
    }))

  it.effect("a miss inside the grace period fires at start even when it is minutes old; once, not once per miss", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      write(file, [
        { id: "fivemin", when: { _tag: "Every", seconds: 300 }, text: "tick", to: "none", created: iso(T0), lastRun: iso(T0 + 300_000) }
      ])
      // Down until 12:34: runs at 12:10 … 12:30 missed; the latest is 4 minutes old.
      yield* TestClock.setTime(T0 + 34 * 60_000)
      const fired: Array<Firing> = []
      const fiber = yield* Effect.forkChild((yield* runner(file, fired)).run)
      yield* TestClock.adjust(Duration.seconds(1))
      expect(fired).toEqual([{ id: "fivemin", occurrence: iso(T0 + 30 * 60_000), clock: iso(T0 + 34 * 60_000) }])
      yield* TestClock.adjust(Duration.seconds(59))
      expect(fired).toHaveLength(2)
      expect(fired[1]!.occurrence).toBe(iso(T0 + 35 * 60_000))
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("a clock set back after it ran ahead: each entry counts from now, said once, and fires at its next occurrence, not a burst", () =>
    Effect.gen(function*() {
      const YEAR = 365 * 24 * HOUR
      const file = ScheduleStore.fileIn(yield* tempDir())
      write(file, [{ id: "minutely", when: { _tag: "Every", seconds: 60 }, text: "tick", to: "none", created: iso(T0) }])
      const logs = yield* captureLogs
      const fired: Array<Firing> = []
      // The machine boots with its clock a year ahead: the entry fires for then, and one is added then.
      yield* TestClock.setTime(T0 + YEAR)
      const ahead = yield* Effect.forkChild((yield* runner(file, fired, 0)).run)
      yield* TestClock.adjust(Duration.seconds(1))
      yield* Fiber.interrupt(ahead)
      expect(fired.map((firing) => firing.occurrence)).toEqual([iso(T0 + YEAR)])
      fired.length = 0
      yield* ScheduleStore.add(file, { when: { _tag: "Every", seconds: 300 }, text: "check", to: "none" }, T0 + YEAR + 1000, 65_536)
      // The clock is set right; the agent restarts; ten minutes pass.
      yield* TestClock.setTime(T0 + 2 * 60_000)
      const set = yield* Effect.forkChild(Effect.provide((yield* runner(file, fired, 0)).run, logs.layer))
      yield* TestClock.adjust(Duration.minutes(10))
      yield* Fiber.interrupt(set)
      const [minutely, added] = yield* ScheduleStore.read(file)
      expect(fired.filter((firing) => firing.id === "minutely").map((firing) => firing.occurrence)).toEqual(
        Array.from({ length: 10 }, (_, i) => iso(T0 + (3 + i) * 60_000))
      )
      expect(fired.filter((firing) => firing.id === added!.id).map((firing) => firing.occurrence)).toEqual([iso(T0 + 7 * 60_000), iso(T0 + 12 * 60_000)])
      expect(minutely!.lastRun).toBe(iso(T0 + 12 * 60_000))
      expect(added!.created).toBe(iso(T0 + 2 * 60_000))
      expect(logs.lines.filter((line) => line.includes("the clock went back"))).toEqual([
        `WARN schedule minutely: its last run ${iso(T0 + YEAR)} is later than now (${iso(T0 + 2 * 60_000)}): the clock went back; it counts from now, next run ${iso(T0 + 3 * 60_000)}`,
        `WARN schedule ${added!.id}: its creation ${iso(T0 + YEAR + 1000)} is later than now (${iso(T0 + 2 * 60_000)}): the clock went back; it counts from now, next run ${iso(T0 + 7 * 60_000)}`
      ])
    }))

  it.effect("a file that does not decode is said once, not at every look; fixed, its entries fire", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      fs.writeFileSync(file, "{ not json")
      const logs = yield* captureLogs
      yield* TestClock.setTime(T0)
      const fired: Array<Firing> = []
      const runner = yield* ScheduleRunner.make({
        store: ScheduleRunner.fromStore(ScheduleStore.fileStore(file)),
        graceMs: 600_000,
        pollMs: 1000,
        fire: (entry) => Effect.sync(() => void fired.push({ id: entry.id, occurrence: "", clock: "" }))
      })
      const fiber = yield* Effect.forkChild(Effect.provide(runner.run, logs.layer))
      yield* TestClock.adjust(Duration.seconds(5))
      expect(logs.lines.filter((line) => line.includes("schedule not fired"))).toEqual([
        expect.stringContaining(`ERROR schedule not fired: ${file} is refused`)
      ])
      write(file, [{ id: "fixed", when: { _tag: "Every", seconds: 2 }, text: "tick", to: "none", created: iso(T0 + 5000) }])
      yield* TestClock.adjust(Duration.seconds(3))
      expect(fired.map((firing) => firing.id)).toEqual(["fixed"])
      yield* Fiber.interrupt(fiber)
    }))
})
