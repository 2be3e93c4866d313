/**
 * The schedule as data (issue 51): schedules.json in the agent's memory
 * directory, decoded whole or refused with the file and the reason; what a
 * user or the model writes for an entry's time read or refused with the
 * reason (bad expressions, unknown zones, past times, unknown destinations).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import * as ScheduleDelivery from "../../src/schedule/ScheduleDelivery.js"
import * as ScheduleEntry from "../../src/schedule/ScheduleEntry.js"
import * as ScheduleInput from "../../src/schedule/ScheduleInput.js"
import * as ScheduleStore from "../../src/schedule/ScheduleStore.js"
import { tempDir } from "../support/Sandbox.js"

const now = Date.parse("2026-03-07T12:00:00Z")
const when = (input: ScheduleInput.WhenInput) => ScheduleInput.parseWhen(input, now)
const failure = <A>(result: Result.Result<A, string>) => Result.isFailure(result) ? result.failure : `accepted: ${JSON.stringify(result)}`

describe("what a schedule entry's time is written as", () => {
  it("a cron expression in a time zone, an interval down to seconds, a single time", () => {
    expect(when({ cron: "0 9 * * 1-5", tz: "Europe/Paris" })).toEqual(
      Result.succeed({ _tag: "Cron", expression: "0 9 * * 1-5", zone: "Europe/Paris" })
    )
    expect(when({ every: "30m" })).toEqual(Result.succeed({ _tag: "Every", seconds: 1800 }))
    expect(when({ every: "1h30m" })).toEqual(Result.succeed({ _tag: "Every", seconds: 5400 }))
    expect(when({ every: "5s" })).toEqual(Result.succeed({ _tag: "Every", seconds: 5 }))
    expect(when({ every: "2 minutes" })).toEqual(Result.succeed({ _tag: "Every", seconds: 120 }))
    expect(when({ at: "+10m" })).toEqual(Result.succeed({ _tag: "At", at: "2026-03-07T12:10:00.000Z" }))
    expect(when({ at: "in 90s" })).toEqual(Result.succeed({ _tag: "At", at: "2026-03-07T12:01:30.000Z" }))
    // 09:00 in Paris has passed today (13:00 there): its next coming is tomorrow's.
    expect(when({ at: "09:00", tz: "Europe/Paris" })).toEqual(Result.succeed({ _tag: "At", at: "2026-03-08T08:00:00.000Z" }))
    expect(when({ at: "21:30", tz: "America/New_York" })).toEqual(Result.succeed({ _tag: "At", at: "2026-03-08T02:30:00.000Z" }))
    // A wall-clock date in a zone, after New York's change to daylight-saving time (8 March 2026).
    expect(when({ at: "2026-03-09 09:00", tz: "America/New_York" })).toEqual(
      Result.succeed({ _tag: "At", at: "2026-03-09T13:00:00.000Z" })
    )
    expect(when({ at: "2026-03-08T06:00:00+01:00" })).toEqual(Result.succeed({ _tag: "At", at: "2026-03-08T05:00:00.000Z" }))
  })

  it("refuses bad expressions, unknown zones, past times, intervals under a second, and two ways at once, with the reason", () => {
    expect(failure(when({ cron: "every day at nine", tz: "UTC" }))).toContain('bad cron expression "every day at nine"')
    expect(failure(when({ cron: "0 61 * * *", tz: "UTC" }))).toContain("bad cron expression")
    expect(failure(when({ cron: "0 9 * * *", tz: "Mars/Olympus" }))).toContain('unknown time zone "Mars/Olympus"')
    expect(failure(when({ cron: "0 0 30 2 *", tz: "UTC" }))).toContain("never fires")
    expect(failure(when({ at: "2026-03-07T11:59:00Z" }))).toBe(
      "2026-03-07T11:59:00.000Z is in the past (now is 2026-03-07T12:00:00.000Z)"
    )
    expect(failure(when({ at: "2025-01-01 09:00", tz: "UTC" }))).toContain("is in the past")
    expect(failure(when({ at: "tomorrow-ish" }))).toContain('bad time "tomorrow-ish"')
    expect(failure(when({ at: "25:00" }))).toContain('bad time of day "25:00"')
    expect(failure(when({ every: "0s" }))).toContain("at least 1s")
    expect(failure(when({ every: "500 millis" }))).toContain("whole seconds")
    expect(failure(when({ every: "often" }))).toContain('bad interval "often"')
    expect(failure(when({ every: "5m", at: "+1m" }))).toContain("exactly one of")
    expect(failure(when({}))).toContain("exactly one of")
  })

  it("refuses intervals over 100 years and times past the year 9999 with the reason, where formatting them would throw", () => {
    expect(when({ every: "36500d" })).toEqual(Result.succeed({ _tag: "Every", seconds: 36500 * 86_400 }))
    expect(failure(when({ every: "36501d" }))).toBe('bad interval "36501d": it is over 100 years (36500d, the longest a schedule holds)')
    expect(failure(when({ every: "99999999999d" }))).toContain("over 100 years")
    expect(failure(when({ every: `${"9".repeat(400)}s` }))).toContain("over 100 years")
    expect(failure(when({ every: "Infinity" }))).toContain("over 100 years")
    expect(failure(when({ at: "+99999999999d" }))).toContain("over 100 years")
    expect(when({ at: "9999-12-31T23:59:00Z" })).toEqual(Result.succeed({ _tag: "At", at: "9999-12-31T23:59:00.000Z" }))
    // 23:00 in New York on the last day of 9999 is in the year 10000 in UTC.
    expect(failure(when({ at: "9999-12-31 23:00", tz: "America/New_York" }))).toBe('"9999-12-31 23:00" is past the year 9999 (the last a schedule holds)')
    expect(ScheduleEntry.formatInstant(1e300)).toBe("1e+300 ms from 1970 (beyond any date)")
  })

  it("refuses a date that does not exist rather than moving it to another day; reads offsets and fractions of a second", () => {
    expect(failure(when({ at: "2027-02-30 09:00", tz: "UTC" }))).toBe('bad date "2027-02-30 09:00": February 2027 has 28 days')
    expect(failure(when({ at: "2027-02-30T09:00:00Z" }))).toBe('bad date "2027-02-30T09:00:00Z": February 2027 has 28 days')
    expect(failure(when({ at: "2027-13-01 09:00", tz: "UTC" }))).toBe('bad date "2027-13-01 09:00": there is no month 13')
    expect(failure(when({ at: "2027-04-00 09:00", tz: "UTC" }))).toBe('bad date "2027-04-00 09:00": April 2027 has 30 days')
    expect(failure(when({ at: "2027-02-28 24:00", tz: "UTC" }))).toBe('bad date "2027-02-28 24:00": there is no hour 24 (00 to 23)')
    expect(failure(when({ at: "2027-02-28T09:60:00+01:00" }))).toBe('bad date "2027-02-28T09:60:00+01:00": there is no minute 60 (00 to 59)')
    expect(failure(when({ at: "2027-02-28T09:00:00+25:00" }))).toBe('bad date "2027-02-28T09:00:00+25:00": an offset is at most ±23:59')
    expect(when({ at: "2028-02-29 09:00", tz: "UTC" })).toEqual(Result.succeed({ _tag: "At", at: "2028-02-29T09:00:00.000Z" }))
    expect(when({ at: "2027-02-28T09:00:00.25-0130" })).toEqual(Result.succeed({ _tag: "At", at: "2027-02-28T10:30:00.250Z" }))
    expect(when({ at: "2027-02-28 09:00z" })).toEqual(Result.succeed({ _tag: "At", at: "2027-02-28T09:00:00.000Z" }))
  })

  it("a wall-clock time the zone skips is moved forward by the gap; one it has twice is the first", () => {
    // New York goes from 02:00 to 03:00 on 8 March 2026: 02:30 is 03:30 EDT.
    expect(when({ at: "2026-03-08 02:30", tz: "America/New_York" })).toEqual(Result.succeed({ _tag: "At", at: "2026-03-08T07:30:00.000Z" }))
    // And from 02:00 back to 01:00 on 1 November 2026: 01:30 is first 01:30 EDT.
    expect(when({ at: "2026-11-01 01:30", tz: "America/New_York" })).toEqual(Result.succeed({ _tag: "At", at: "2026-11-01T05:30:00.000Z" }))
  })

  it("destinations: terminal, discord:CHANNEL, webhook:URL, none; anything else refused with the reason", () => {
    expect(ScheduleEntry.parseDestination("terminal")).toEqual(Result.succeed({ _tag: "Terminal" }))
    expect(ScheduleEntry.parseDestination("discord:123456789012345678")).toEqual(
      Result.succeed({ _tag: "Discord", channel: "123456789012345678" })
    )
    expect(ScheduleEntry.parseDestination("webhook:http://127.0.0.1:9/hook")).toEqual(
      Result.succeed({ _tag: "Webhook", url: "http://127.0.0.1:9/hook" })
    )
    expect(failure(ScheduleEntry.parseDestination("email:me@example.com"))).toContain('unknown destination "email:me@example.com"')
    expect(failure(ScheduleEntry.parseDestination("discord:general"))).toContain("numeric id")
    expect(failure(ScheduleEntry.parseDestination("webhook:ftp://example.com"))).toContain("http:// or https://")
  })
})

describe("schedules.json", () => {
  const draft = { when: { _tag: "Every", seconds: 60 }, text: "check the build", to: "none" } as const

  it.effect("an entry added is on disk, listed, recorded when run, and removed by its id", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      expect(yield* ScheduleStore.read(file)).toEqual([])
      const entry = yield* ScheduleStore.add(file, draft, now, 65_536)
      expect(entry).toMatchObject({ text: "check the build", to: "none", created: "2026-03-07T12:00:00.000Z" })
      expect(entry.id).toMatch(/^[0-9a-f]{8}$/)
      expect(JSON.parse(fs.readFileSync(file, "utf8"))).toEqual({ entries: [entry] })
      expect(ScheduleEntry.nextOf(entry)).toBe(now + 60_000)
      expect(yield* ScheduleStore.markRun(file, entry.id, now + 60_000)).toBe(true)
      // Already past that occurrence: another process fired it.
      expect(yield* ScheduleStore.markRun(file, entry.id, now + 60_000)).toBe(false)
      const [recorded] = yield* ScheduleStore.read(file)
      expect(recorded!.lastRun).toBe("2026-03-07T12:01:00.000Z")
      expect(ScheduleEntry.nextOf(recorded!)).toBe(now + 120_000)
      expect(yield* ScheduleStore.remove(file, entry.id)).toEqual(recorded)
      expect(yield* ScheduleStore.read(file)).toEqual([])
      const missing = yield* Effect.flip(ScheduleStore.remove(file, entry.id))
      expect(missing).toMatchObject({ reason: "NotFound", message: `no schedule entry ${entry.id} in ${file}` })
    }))

  it.effect("a single time is removed once it has fired", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      const entry = yield* ScheduleStore.add(file, { ...draft, when: { _tag: "At", at: "2026-03-07T12:05:00.000Z" } }, now, 65_536)
      expect(yield* ScheduleStore.markRun(file, entry.id, Date.parse("2026-03-07T12:05:00Z"))).toBe(true)
      expect(yield* ScheduleStore.read(file)).toEqual([])
    }))

  it.effect("a last run later than now (the clock went back) counts from now; one under a minute ahead (clocks of a cluster differ) is kept", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      const entry = yield* ScheduleStore.add(file, draft, now, 65_536)
      yield* ScheduleStore.markRun(file, entry.id, now + 30_000)
      // 30 s ahead: trusted, so an occurrence already fired by a runner whose clock is ahead does not fire again.
      expect(yield* ScheduleStore.modify(file, ScheduleStore.rewinding(entry.id, now))).toBe(false)
      expect(ScheduleEntry.nextOf((yield* ScheduleStore.read(file))[0]!, now)).toBe(now + 60_000)
      yield* ScheduleStore.markRun(file, entry.id, now + 86_400_000)
      const [ahead] = yield* ScheduleStore.read(file)
      // As recorded it waits a day; from now, the next minute.
      expect(ScheduleEntry.nextOf(ahead!)).toBe(now + 86_460_000)
      expect(ScheduleEntry.nextOf(ahead!, now + 5_000)).toBe(now + 60_000)
      expect(yield* ScheduleStore.modify(file, ScheduleStore.rewinding(entry.id, now + 5_000))).toBe(true)
      expect((yield* ScheduleStore.read(file))[0]).toEqual({ ...entry, lastRun: "2026-03-07T12:00:05.000Z" })
      expect(yield* ScheduleStore.modify(file, ScheduleStore.rewinding(entry.id, now + 5_000))).toBe(false)
    }))

  it.effect("an entry with an unknown destination is refused with the reason, and nothing is written", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      const refused = yield* Effect.flip(ScheduleStore.add(file, { ...draft, to: "pager:42" }, now, 65_536))
      expect(refused).toMatchObject({ reason: "Refused" })
      expect(refused.message).toContain('unknown destination "pager:42"')
      expect(fs.existsSync(file)).toBe(false)
    }))

  it.effect("a message over PLANCKCLAW_MAX_MESSAGE_BYTES, its mark counted, is refused when added, saying the limit, rather than at every firing; nothing is written", () =>
    Effect.gen(function*() {
      const file = ScheduleStore.fileIn(yield* tempDir())
      // "[scheduled 0123abcd] " is 21 bytes: 79 bytes of text make 100, the limit; "é" is two bytes.
      const refused = yield* Effect.flip(ScheduleStore.add(file, { ...draft, text: "é".repeat(40) }, now, 100))
      expect(refused.reason).toBe("Refused")
      expect(refused.message).toMatch(
        /^the message is 80 bytes; the agent takes at most 100 \(PLANCKCLAW_MAX_MESSAGE_BYTES\), the 21 bytes of its mark "\[scheduled [0-9a-f]{8}\] " included, so it would be refused at every firing: write at most 79 bytes$/
      )
      expect(fs.existsSync(file)).toBe(false)
      const fits = yield* ScheduleStore.add(file, { ...draft, text: "x".repeat(79) }, now, 100)
      expect(Buffer.byteLength(ScheduleDelivery.messageOf(fits))).toBe(100)
      expect(yield* ScheduleStore.read(file)).toEqual([fits])
    }))

  it.effect("a file that does not decode is refused with the file and the reason, and left as it was", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const file = path.join(dir, "schedules.json")
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["{not json", "is refused"],
        [JSON.stringify({ entries: [{ id: "a1", text: "x", to: "none", created: "2026-03-07T12:00:00Z" }] }), "when"],
        [JSON.stringify({ entries: [{ id: "a1", when: { _tag: "Cron", expression: "0 9 * * *", zone: "Nowhere/City" }, text: "x", to: "none", created: "2026-03-07T12:00:00Z" }] }), 'entry a1: unknown time zone "Nowhere/City"'],
        [JSON.stringify({ entries: [{ id: "a1", when: { _tag: "Every", seconds: 5 }, text: "x", to: "fax:1", created: "2026-03-07T12:00:00Z" }] }), 'entry a1: unknown destination "fax:1"'],
        [JSON.stringify({ entries: [1, 2].map(() => ({ id: "a1", when: { _tag: "Every", seconds: 5 }, text: "x", to: "none", created: "2026-03-07T12:00:00Z" })) }), "two entries have the id a1"],
        // What an older build stored for --every 99999999999d and --at +99999999999d, whose times no Date can format.
        [JSON.stringify({ entries: [{ id: "big", when: { _tag: "Every", seconds: 8_639_999_999_913_600 }, text: "x", to: "none", created: "2026-03-07T12:00:00Z" }] }), "entry big: every 8639999999913600 s is over 100 years"],
        [JSON.stringify({ entries: [{ id: "far", when: { _tag: "At", at: "+100000-01-01T00:00:00Z" }, text: "x", to: "none", created: "2026-03-07T12:00:00Z" }] }), 'entry far: at "+100000-01-01T00:00:00Z" is past the year 9999'],
        [JSON.stringify({ entries: [{ id: "late", when: { _tag: "Every", seconds: 5 }, text: "x", to: "none", created: "2026-03-07T12:00:00Z", lastRun: "+100000-01-01T00:00:00Z" }] }), 'entry late: lastRun "+100000-01-01T00:00:00Z" is past the year 9999'],
        // A hand-edited cron that matches no date (31 April), which `add` refuses.
        [JSON.stringify({ entries: [{ id: "apr31", when: { _tag: "Cron", expression: "0 9 31 4 *", zone: "Europe/Paris" }, text: "x", to: "none", created: "2026-03-07T12:00:00Z" }] }), 'entry apr31: cron "0 9 31 4 *" never fires (no such date)']
      ]
      for (const [text, reason] of cases) {
        fs.writeFileSync(file, text)
        const refused = yield* Effect.flip(ScheduleStore.read(file))
        expect(refused.reason).toBe("BadFile")
        expect(refused.message).toContain(`${file} is refused`)
        expect(refused.message).toContain(reason)
        // Refused for a change too, and not overwritten.
        yield* Effect.flip(ScheduleStore.add(file, draft, now, 65_536))
        expect(fs.readFileSync(file, "utf8")).toBe(text)
      }
    }))

  it("a cron that matches no date is refused from its fields (a file is decoded at every look); one a weekday or another month lets fire is kept", () => {
    const entryOf = (expression: string) => ({
      entries: [{ id: "c1", when: { _tag: "Cron", expression, zone: "Europe/Paris" }, text: "x", to: "none", created: "2026-03-07T12:00:00Z" }]
    })
    const decoded = (expression: string) => ScheduleStore.decode("schedules.json", JSON.stringify(entryOf(expression)))
    const refusal = (expression: string) => {
      const result = decoded(expression)
      return Result.isFailure(result) ? result.failure.message : "kept"
    }
    for (const never of ["0 9 31 4 *", "0 0 30 2 *", "0 9 31 4,6,9,11 *", "0 0 9 31 4 *", "0 9 31 4 */2"]) {
      expect(refusal(never), never).toBe(`schedules.json is refused: entry c1: cron "${never}" never fires (no such date) (fix or remove it)`)
    }
    // 29 February (leap years), 31 May, and Mondays of April (day or weekday: either matches) all come.
    for (const fires of ["0 0 29 2 *", "0 9 31 4,5 *", "0 9 31 4 1", "0 9 * * *", "0 9 1-31 4 *"]) {
      expect(refusal(fires), fires).toBe("kept")
    }
  })
})
