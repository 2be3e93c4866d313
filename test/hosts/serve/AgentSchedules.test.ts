/**
 * An agent's schedule as serve's route and the console show it
 * (AgentSchedules), under the TestClock: each entry's next run is the one
 * the runner will fire, counted from now when its creation or last run is
 * later than now (the clock went back), as `planckclaw schedule list` shows.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import * as AgentSchedules from "../../../src/hosts/serve/AgentSchedules.js"
import * as ScheduleStore from "../../../src/schedule/ScheduleStore.js"
import { tempDir } from "../../support/Sandbox.js"

const NOW = Date.parse("2026-06-01T08:00:00Z")
const HOUR = 3_600_000
const YEAR = 365 * 24 * HOUR
const iso = (ms: number) => new Date(ms).toISOString()

describe("an agent's schedule as the host shows it", () => {
  it.effect("counts the next run from now for an entry written while the clock was ahead, as the runner fires it", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      fs.writeFileSync(ScheduleStore.fileIn(directory), JSON.stringify({
        entries: [
          // Made and last run while the machine's clock was a year ahead.
          { id: "ahead", when: { _tag: "Every", seconds: 3600 }, text: "check the build", to: "none", created: iso(NOW + YEAR - 2 * HOUR), lastRun: iso(NOW + YEAR) },
          { id: "born", when: { _tag: "Cron", expression: "0 9 * * *", zone: "UTC" }, text: "digest", to: "none", created: iso(NOW + YEAR) },
          // A trusted one: its next run after its last.
          { id: "fine", when: { _tag: "Every", seconds: 3600 }, text: "check", to: "none", created: iso(NOW - 3 * HOUR), lastRun: iso(NOW - HOUR) }
        ]
      }))
      yield* TestClock.setTime(NOW)
      const listed = yield* AgentSchedules.schedulesOf(directory)
      expect(listed.entries.map((entry) => [entry.id, entry.nextRun])).toEqual([
        ["ahead", iso(NOW + HOUR)],
        ["born", iso(NOW + HOUR)],
        ["fine", iso(NOW)]
      ])
    }))
})
