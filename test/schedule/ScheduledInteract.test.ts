/**
 * `run`'s schedule beside its bridge (ScheduledInteract), under the
 * TestClock: an entry whose firing is not answered yet (a model slower
 * than the entry, or unreachable for hours) skips its next occurrences,
 * each said on standard error, rather than queueing them to be answered in
 * a burst; once its reply is delivered, it fires again at its next one.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import type { InboundMessage } from "../../src/ports/Interact.js"
import * as ScheduledInteract from "../../src/schedule/ScheduledInteract.js"
import * as ScheduleStore from "../../src/schedule/ScheduleStore.js"
import { captureLogs } from "../support/LogCapture.js"
import { tempDir } from "../support/Sandbox.js"
import { advanceTo } from "../support/TestClockWait.js"

const T0 = Date.parse("2026-06-01T08:00:00Z")
const iso = (ms: number) => new Date(ms).toISOString()

describe("run's schedule beside its bridge", () => {
  it.effect("an entry not answered yet skips its next runs, said each time; answered, it fires at its next one", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      fs.writeFileSync(file, JSON.stringify({
        entries: [{ id: "m1", when: { _tag: "Every", seconds: 60 }, text: "check the build", to: "none", created: iso(T0) }]
      }))
      yield* TestClock.setTime(T0)
      const logs = yield* captureLogs
      const user = yield* InMemoryInteract.make
      const { interact } = yield* ScheduledInteract.withSchedule(user.service, {
        file,
        graceMs: 600_000,
        pollMs: 3_600_000,
        routes: { agent: "run" }
      }).pipe(Effect.provide(logs.layer))
      const received: Array<InboundMessage> = []
      yield* Effect.forkScoped(Stream.runForEach(interact.messages, (message) => Effect.sync(() => void received.push(message))))
      for (let minute = 1; minute <= 5; minute++) yield* advanceTo(T0 + minute * 60_000)
      // The agent has not answered the run at minute 1: the four after it are skipped, not queued.
      expect(received).toEqual([{ channel: "schedule/m1/none", text: "[scheduled m1] check the build" }])
      expect(logs.lines.filter((line) => line.includes("still being answered"))).toEqual([2, 3, 4, 5].map((minute) =>
        `WARN schedule m1: its run at ${iso(T0 + 60_000)} is still being answered: its run at ${iso(T0 + minute * 60_000)} is skipped`
      ))
      yield* interact.send({ channel: "schedule/m1/none", text: "the build is green" })
      yield* advanceTo(T0 + 6 * 60_000)
      expect(received).toHaveLength(2)
      expect(JSON.parse(fs.readFileSync(file, "utf8")).entries[0].lastRun).toBe(iso(T0 + 6 * 60_000))
    }))
})
