/**
 * What a user (`schedule add`) or the model (the schedule tool) writes for
 * an entry's time, read into a When, or refused with the reason: a bad cron
 * expression or time zone, an interval under a second or over 100 years, a
 * time in the past or past the year 9999.
 */
import * as Cron from "effect/Cron"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { cronOf, formatInstant, instantProblem, intervalProblem, occurrenceAfter, type When } from "./ScheduleEntry.js"

/** The three ways to say when; exactly one is given. */
export interface WhenInput {
  readonly cron?: string | undefined
  /** The zone of `cron`, and of a wall-clock `at`; the machine's zone when absent. */
  readonly tz?: string | undefined
  readonly every?: string | undefined
  readonly at?: string | undefined
}

let lastZone: { readonly tz: string | undefined; readonly name: string } | undefined

/**
 * This machine's time zone, by name (UTC when it has none). Asking Intl for
 * it costs about 250 µs, and every agent `serve` starts asks once: it is
 * kept while TZ stays what it was.
 */
export const localZone = (): string => {
  const tz = process.env.TZ
  if (lastZone === undefined || lastZone.tz !== tz) lastZone = { tz, name: DateTime.zoneToString(DateTime.zoneMakeLocal()) }
  return lastZone.name
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }
const COMPACT = /^(?:\d+[smhdw])+$/

/** `30m`, `1h30m`, `90s`, `2d`, or Effect's `30 minutes`: whole seconds, at least one, at most 100 years. */
export const parseInterval = (text: string): Result.Result<number, string> => {
  const trimmed = text.trim()
  const ms = COMPACT.test(trimmed)
    ? [...trimmed.matchAll(/(\d+)([smhdw])/g)].reduce((sum, [, n, unit]) => sum + Number(n) * UNITS[unit!]! * 1000, 0)
    : Option.match(Duration.fromInput(trimmed as Duration.Input), { onNone: () => Number.NaN, onSome: Duration.toMillis })
  // Infinite (a number too long to hold, or "Infinity") is no format error: it is refused as too long below.
  if (Number.isNaN(ms)) {
    return Result.fail(`bad interval "${text}": write it as 30s, 5m, 1h30m, 2d (or "30 minutes")`)
  }
  const long = intervalProblem(ms / 1000)
  if (long !== undefined) return Result.fail(`bad interval "${text}": it ${long}`)
  if (ms < 1000 || ms % 1000 !== 0) return Result.fail(`bad interval "${text}": whole seconds, at least 1s`)
  return Result.succeed(ms / 1000)
}

const WALL_TIME = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/
const WALL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/
const WITH_OFFSET = /(?:Z|[+-]\d{2}:?\d{2})$/i

/**
 * A single time: `+10m` or `in 10m` (from now), `09:00` (its next coming in
 * the zone), `2026-12-24 09:00` (a wall-clock time in the zone), or an ISO
 * 8601 instant with its offset (`2026-12-24T08:00:00Z`). Past times, and
 * times past the year 9999, are refused.
 */
export const parseAt = (text: string, zone: string, nowMs: number): Result.Result<number, string> => {
  const trimmed = text.trim()
  const relative = /^(?:\+|in\s+)(.+)$/i.exec(trimmed)
  const resolved: Result.Result<number, string> = relative !== null
    ? Result.map(parseInterval(relative[1]!), (seconds) => Math.round(nowMs / 1000) * 1000 + seconds * 1000)
    : wallOrInstant(trimmed, zone, nowMs)
  return Result.flatMap(resolved, (at) => {
    const late = instantProblem(at)
    if (late !== undefined) return Result.fail(`"${text}" ${late}`)
    return at > nowMs
      ? Result.succeed(at)
      : Result.fail(`${formatInstant(at)} is in the past (now is ${formatInstant(nowMs)})`)
  })
}

const wallOrInstant = (text: string, zone: string, nowMs: number): Result.Result<number, string> => {
  const time = WALL_TIME.exec(text)
  if (time !== null) {
    const [, hour, minute, second] = time
    if (Number(hour) > 23 || Number(minute) > 59 || Number(second ?? 0) > 59) return Result.fail(`bad time of day "${text}"`)
    // Its next coming in the zone: a daily cron finds it, across a change of daylight-saving time too.
    return Result.flatMap(cronOf(`${Number(second ?? 0)} ${Number(minute)} ${Number(hour)} * * *`, zone), (cron) =>
      Result.succeed(Cron.next(cron, new Date(nowMs)).getTime()))
  }
  const wall = WALL_DATE_TIME.exec(text)
  if (wall !== null) {
    const [, year, month, day, hour, minute, second] = wall.map(Number)
    if (Option.isNone(DateTime.zoneFromString(zone))) return Result.fail(`unknown time zone "${zone}"`)
    return Option.match(
      DateTime.makeZoned(
        { year: year!, month: month!, day: day!, hour: hour!, minute: minute!, second: Number.isNaN(second) ? 0 : second!, millisecond: 0 },
        { timeZone: zone, adjustForTimeZone: true }
      ),
      { onNone: () => Result.fail(`bad date and time "${text}"`), onSome: (zoned) => Result.succeed(DateTime.toEpochMillis(zoned)) }
    )
  }
  const ms = WITH_OFFSET.test(text) ? Date.parse(text) : Number.NaN
  return Number.isNaN(ms)
    ? Result.fail(`bad time "${text}": write +10m, 09:00, 2026-12-24 09:00, or 2026-12-24T08:00:00Z`)
    : Result.succeed(ms)
}

/** The When of exactly one of cron, every or at, or why it is refused. */
export const parseWhen = (input: WhenInput, nowMs: number): Result.Result<When, string> => {
  const given = [input.cron, input.every, input.at].filter((value) => value !== undefined).length
  if (given !== 1) return Result.fail("say when with exactly one of --cron, --every or --at")
  const zone = input.tz ?? localZone()
  if (input.cron !== undefined) {
    const expression = input.cron.trim()
    return Result.flatMap(cronOf(expression, zone), (): Result.Result<When, string> => {
      const when: When = { _tag: "Cron", expression, zone }
      return occurrenceAfter(when, nowMs, nowMs) === undefined
        ? Result.fail(`cron "${expression}" never fires (no such date)`)
        : Result.succeed(when)
    })
  }
  if (input.every !== undefined) return Result.map(parseInterval(input.every), (seconds): When => ({ _tag: "Every", seconds }))
  if (input.tz !== undefined && Option.isNone(DateTime.zoneFromString(input.tz))) {
    return Result.fail(`unknown time zone "${input.tz}"`)
  }
  return Result.map(parseAt(input.at!, zone, nowMs), (at): When => ({ _tag: "At", at: formatInstant(at) }))
}
