/**
 * What a user (`schedule add`) or the model (the schedule tool) writes for
 * an entry's time, read into a When, or refused with the reason: a bad cron
 * expression or time zone, an interval under a second or over 100 years, a
 * date that does not exist (30 February), a time in the past or past the
 * year 9999.
 */
import * as Cron from "effect/Cron"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { cronDateProblem, cronOf, formatInstant, instantProblem, intervalProblem, occurrenceAfter, type When } from "./ScheduleEntry.js"

/** The three ways to say when; exactly one is given. */
export interface WhenInput {
  readonly cron?: string | undefined
  /** The zone of `cron`, and of a wall-clock `at`; the machine's zone when absent. */
  readonly tz?: string | undefined
  readonly every?: string | undefined
  readonly at?: string | undefined
}

let lastZone: { readonly tz: string | undefined; readonly name: string | undefined } | undefined

/**
 * This machine's time zone, by its IANA name; undefined when it has none a
 * cron can be read in (TZ set to a POSIX rule such as `UTC+3`, or to an
 * unknown name: Intl then names it `undefined` or `Etc/Unknown`), so that a
 * time that needs a zone asks for one rather than storing none. Asking Intl
 * for it costs about 250 µs, and every agent `serve` starts asks once: it is
 * kept while TZ stays what it was.
 */
export const localZone = (): string | undefined => {
  const tz = process.env.TZ
  if (lastZone === undefined || lastZone.tz !== tz) {
    const name: unknown = DateTime.zoneToString(DateTime.zoneMakeLocal())
    lastZone = { tz, name: typeof name === "string" && Option.isSome(DateTime.zoneFromString(name)) ? name : undefined }
  }
  return lastZone.name
}

/** Why a time cannot be read in this machine's zone: it has no IANA name. */
const noLocalZone = () =>
  `this machine's time zone (TZ=${JSON.stringify(process.env.TZ ?? "")}) has no IANA name: give one with --tz (Europe/Paris, UTC)`

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
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))$/i

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]

/** A date and time's fields as written (month 1 to 12). */
interface Fields {
  readonly year: number
  readonly month: number
  readonly day: number
  readonly hour: number
  readonly minute: number
  readonly second: number
}

/** The UTC instant of `fields` read as UTC; setUTCFullYear, as Date.UTC takes the years 0 to 99 for 1900 to 1999. */
const utcMillis = (fields: Fields): number => {
  const date = new Date(0)
  date.setUTCFullYear(fields.year, fields.month - 1, fields.day)
  date.setUTCHours(fields.hour, fields.minute, fields.second, 0)
  return date.getTime()
}

/**
 * Why `fields` name no date and time (30 February, month 13, 24:00), or
 * undefined. Checked before reading them: Date and DateTime would roll
 * them over to another day (30 February to 2 March).
 */
const calendarProblem = (fields: Fields): string | undefined => {
  if (fields.month < 1 || fields.month > 12) return `there is no month ${fields.month}`
  const date = new Date(0)
  date.setUTCFullYear(fields.year, fields.month, 0)
  const days = date.getUTCDate()
  if (fields.day < 1 || fields.day > days) return `${MONTHS[fields.month - 1]} ${fields.year} has ${days} days`
  if (fields.hour > 23) return `there is no hour ${fields.hour} (00 to 23)`
  if (fields.minute > 59) return `there is no minute ${fields.minute} (00 to 59)`
  if (fields.second > 59) return `there is no second ${fields.second} (00 to 59)`
  return undefined
}

/** The fields of a match of WALL_DATE_TIME or INSTANT (its first six groups), or why they name no date. */
const fieldsOf = (text: string, groups: ReadonlyArray<string | undefined>): Result.Result<Fields, string> => {
  const [year, month, day, hour, minute, second] = groups.slice(1, 7).map((group) => Number(group ?? 0))
  const fields = { year: year!, month: month!, day: day!, hour: hour!, minute: minute!, second: second! }
  const wrong = calendarProblem(fields)
  return wrong === undefined ? Result.succeed(fields) : Result.fail(`bad date "${text}": ${wrong}`)
}

/**
 * A single time: `+10m` or `in 10m` (from now), `09:00` (its next coming in
 * the zone), `2026-12-24 09:00` (a wall-clock time in the zone), or an ISO
 * 8601 instant with its offset (`2026-12-24T08:00:00Z`). Past times, and
 * times past the year 9999, are refused.
 */
export const parseAt = (text: string, zone: string | undefined, nowMs: number): Result.Result<number, string> => {
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

const wallOrInstant = (text: string, zone: string | undefined, nowMs: number): Result.Result<number, string> => {
  const time = WALL_TIME.exec(text)
  const wall = WALL_DATE_TIME.exec(text)
  if ((time !== null || wall !== null) && zone === undefined) return Result.fail(noLocalZone())
  if (time !== null) {
    const [, hour, minute, second] = time
    if (Number(hour) > 23 || Number(minute) > 59 || Number(second ?? 0) > 59) return Result.fail(`bad time of day "${text}"`)
    // Its next coming in the zone: a daily cron finds it, across a change of daylight-saving time too.
    return Result.flatMap(cronOf(`${Number(second ?? 0)} ${Number(minute)} ${Number(hour)} * * *`, zone!), (cron) =>
      Result.succeed(Cron.next(cron, new Date(nowMs)).getTime()))
  }
  if (wall !== null) {
    if (Option.isNone(DateTime.zoneFromString(zone!))) return Result.fail(`unknown time zone "${zone}"`)
    // A time the zone skips (02:30 as clocks go forward) is moved forward by the gap; one it has twice is the first.
    return Result.flatMap(fieldsOf(text, wall), (fields) =>
      Option.match(DateTime.makeZoned({ ...fields, millisecond: 0 }, { timeZone: zone!, adjustForTimeZone: true }), {
        onNone: () => Result.fail(`bad date and time "${text}"`),
        onSome: (zoned) => Result.succeed(DateTime.toEpochMillis(zoned))
      }))
  }
  const iso = INSTANT.exec(text)
  if (iso === null) return Result.fail(`bad time "${text}": write +10m, 09:00, 2026-12-24 09:00, or 2026-12-24T08:00:00Z`)
  const [fraction, utc, sign, offsetHours, offsetMinutes] = iso.slice(7)
  if (utc === undefined && (Number(offsetHours) > 23 || Number(offsetMinutes) > 59)) {
    return Result.fail(`bad date "${text}": an offset is at most ±23:59`)
  }
  const offsetMs = utc !== undefined ? 0 : (sign === "-" ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000
  const millis = Number((fraction ?? "").padEnd(3, "0").slice(0, 3))
  return Result.map(fieldsOf(text, iso), (fields) => utcMillis(fields) + millis - offsetMs)
}

/** The When of exactly one of cron, every or at, or why it is refused. */
export const parseWhen = (input: WhenInput, nowMs: number): Result.Result<When, string> => {
  const given = [input.cron, input.every, input.at].filter((value) => value !== undefined).length
  if (given !== 1) return Result.fail("say when with exactly one of --cron, --every or --at")
  const zone = input.tz ?? localZone()
  if (input.cron !== undefined) {
    if (zone === undefined) return Result.fail(noLocalZone())
    const expression = input.cron.trim()
    return Result.flatMap(cronOf(expression, zone), (cron): Result.Result<When, string> => {
      const never = cronDateProblem(cron, expression)
      if (never !== undefined) return Result.fail(never)
      const when: When = { _tag: "Cron", expression, zone }
      // One with a date Cron finds too rarely to reach (it gives up after 10,000 steps) has none either.
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
