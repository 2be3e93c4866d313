/**
 * One entry of an agent's schedule: when it fires (a cron expression in a
 * time zone, an interval from its creation, or a single instant), the text
 * the agent receives, and where the reply goes. Plain data as stored in
 * schedules.json (ScheduleStore), and the instants it fires at, in epoch
 * milliseconds: computed from the entry alone, so every host agrees.
 */
import * as Cron from "effect/Cron"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

export const When = Schema.Union([
  /** A cron expression (5 fields, or 6 with seconds) read in an IANA time zone. */
  Schema.TaggedStruct("Cron", { expression: Schema.String, zone: Schema.String }),
  /** Every `seconds`, counted from the entry's creation. */
  Schema.TaggedStruct("Every", { seconds: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)) }),
  /** Once, at an instant (ISO 8601, UTC). */
  Schema.TaggedStruct("At", { at: Schema.String })
])
export type When = typeof When.Type

const ID = /^[a-z0-9]{1,32}$/

export const Entry = Schema.Struct({
  id: Schema.String.check(Schema.isPattern(ID, { message: "an id is 1 to 32 lowercase letters and digits" })),
  when: When,
  text: Schema.NonEmptyString,
  /** `terminal`, `discord:CHANNEL`, `webhook:URL` or `none` (Destination). */
  to: Schema.String,
  /** When the entry was made (ISO 8601): intervals count from it, nothing fires before it. */
  created: Schema.String,
  /** The occurrence it last fired for, or skipped past (ISO 8601). */
  lastRun: Schema.optionalKey(Schema.String)
})
export type Entry = typeof Entry.Type

/** The text the agent receives (and history keeps) for a firing of `entry`. */
export const messageOf = (entry: Pick<Entry, "id" | "text">): string => `[scheduled ${entry.id}] ${entry.text}`

/**
 * Why `entry`'s message is over `maxBytes` (PLANCKCLAW_MAX_MESSAGE_BYTES of
 * the agent that fires it), which would refuse it at every firing; or
 * undefined. Counted as the agent receives it, with its mark (messageOf).
 */
export const sizeProblem = (entry: Pick<Entry, "id" | "text">, maxBytes: number): string | undefined => {
  const size = Buffer.byteLength(messageOf(entry), "utf8")
  if (size <= maxBytes) return undefined
  const text = Buffer.byteLength(entry.text, "utf8")
  return `the message is ${text} bytes; the agent takes at most ${maxBytes} (PLANCKCLAW_MAX_MESSAGE_BYTES), ` +
    `the ${size - text} bytes of its mark "[scheduled ${entry.id}] " included, so it would be refused at every firing: ` +
    `write at most ${Math.max(0, maxBytes - (size - text))} bytes`
}

/** Where a scheduled message's reply goes. */
export type Destination =
  | { readonly _tag: "Terminal" }
  | { readonly _tag: "Discord"; readonly channel: string }
  | { readonly _tag: "Webhook"; readonly url: string }
  | { readonly _tag: "None" }

const DESTINATIONS = "terminal, discord:CHANNEL_ID, webhook:http(s)://URL or none"

/** A destination as written (`--to`, the tool's `to`, the file), or why it is refused. */
export const parseDestination = (text: string): Result.Result<Destination, string> => {
  if (text === "terminal") return Result.succeed({ _tag: "Terminal" })
  if (text === "none") return Result.succeed({ _tag: "None" })
  if (text.startsWith("discord:")) {
    const channel = text.slice("discord:".length)
    return /^\d{1,20}$/.test(channel)
      ? Result.succeed({ _tag: "Discord", channel })
      : Result.fail(`"${text}": a Discord channel is its numeric id (discord:123456789012345678)`)
  }
  if (text.startsWith("webhook:")) {
    const url = text.slice("webhook:".length)
    const parsed = Result.try(() => new URL(url))
    if (Result.isFailure(parsed) || (parsed.success.protocol !== "http:" && parsed.success.protocol !== "https:")) {
      return Result.fail(`"${text}": a webhook is an http:// or https:// URL (webhook:https://example.com/hook)`)
    }
    // fetch refuses such a URL, so nothing could ever be delivered; and the password is not repeated here.
    return parsed.success.username !== "" || parsed.success.password !== ""
      ? Result.fail("a webhook URL cannot hold a user and password (user:password@), as HTTP clients refuse to send it: put the token in its path or query")
      : Result.succeed({ _tag: "Webhook", url })
  }
  return Result.fail(`unknown destination "${text}": one of ${DESTINATIONS}`)
}

/** The most days each month has (February: 29, in a leap year). */
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/**
 * Whether `cron` (parsed from `expression`) matches no date: its days of the
 * month fall in none of its months (31 April, 30 February), and no weekday
 * of its own matches alone. Read from its fields, not searched for: Cron
 * gives up on such a cron only after 10,000 steps (up to 170 ms in a zone
 * with daylight-saving time), and a schedule is decoded at every look.
 */
const matchesNoDate = (cron: Cron.Cron, expression: string): boolean => {
  if (cron.days.size === 0) return false
  const months = cron.months.size === 0 ? MONTH_DAYS.map((_, index) => index + 1) : [...cron.months]
  const firstDay = Math.min(...cron.days)
  if (months.some((month) => firstDay <= MONTH_DAYS[month - 1]!)) return false
  // Days and weekdays both restricted: either matches, unless one is written from `*` (`*/2`): then both must, as Cron reads it.
  const fields = expression.trim().split(/\s+/)
  return cron.weekdays.size === 0 || fields.at(-3)!.startsWith("*") || fields.at(-1)!.startsWith("*")
}

/** Why a cron that parses cannot be used: it matches no date; or undefined. */
export const cronDateProblem = (cron: Cron.Cron, expression: string): string | undefined =>
  matchesNoDate(cron, expression) ? `cron "${expression}" never fires (no such date)` : undefined

/** The cron of a Cron entry, or why it is refused (a bad expression or time zone). */
export const cronOf = (expression: string, zone: string): Result.Result<Cron.Cron, string> =>
  Result.mapError(Cron.parse(expression, zone), (error) =>
    error.input === zone && error.input !== expression
      ? `unknown time zone "${zone}" (an IANA name such as Europe/Paris, or UTC)`
      : `bad cron expression "${expression}": ${error.message} (5 fields, minute to weekday, or 6 with seconds first)`)

const instant = (iso: string): number | undefined => {
  const ms = Date.parse(iso)
  return Number.isNaN(ms) ? undefined : ms
}

/**
 * The bounds that keep every occurrence a date can hold (a Date ends in the
 * year 275760, and formatting one past it throws): an interval is at most
 * 100 years, an instant before the year 10000.
 */
const MAX_INTERVAL_SECONDS = 100 * 365 * 86_400
const INSTANTS_END = Date.UTC(10_000, 0, 1)

/** Why an instant is refused (the year 10000 or later), or undefined. */
export const instantProblem = (ms: number): string | undefined =>
  ms < INSTANTS_END ? undefined : "is past the year 9999 (the last a schedule holds)"

/** Why an interval is refused (over 100 years), or undefined. */
export const intervalProblem = (seconds: number): string | undefined =>
  seconds <= MAX_INTERVAL_SECONDS ? undefined : `is over 100 years (${MAX_INTERVAL_SECONDS / 86_400}d, the longest a schedule holds)`

/** `ms` in ISO 8601; never throws: one no date can hold is said so. */
export const formatInstant = (ms: number): string =>
  Result.getOrElse(Result.try(() => new Date(ms).toISOString()), () => `${ms} ms from 1970 (beyond any date)`)

/** Why `text`, the time of the entry's field `name`, is refused (no ISO 8601 time, or too late), or undefined. */
const timeProblem = (name: string, text: string): string | undefined => {
  const ms = instant(text)
  if (ms === undefined) return `${name} "${text}" is no ISO 8601 time`
  const late = instantProblem(ms)
  return late === undefined ? undefined : `${name} "${text}" ${late}`
}

/** Why a decoded entry cannot be used (its cron, zone, instants, interval, destination), or undefined. */
export const problem = (entry: Entry): string | undefined => {
  const times = [["created", entry.created], ["lastRun", entry.lastRun], ["at", entry.when._tag === "At" ? entry.when.at : undefined]] as const
  for (const [name, text] of times) {
    const wrong = text === undefined ? undefined : timeProblem(name, text)
    if (wrong !== undefined) return wrong
  }
  if (entry.when._tag === "Every") {
    const long = intervalProblem(entry.when.seconds)
    if (long !== undefined) return `every ${entry.when.seconds} s ${long}`
  }
  if (entry.when._tag === "Cron") {
    const cron = cronOf(entry.when.expression, entry.when.zone)
    if (Result.isFailure(cron)) return cron.failure
    const never = cronDateProblem(cron.success, entry.when.expression)
    if (never !== undefined) return never
  }
  const to = parseDestination(entry.to)
  return Result.isFailure(to) ? to.failure : undefined
}

// A cron that matches no date (30 February) would be searched for ever: Cron gives up past a few years and throws.
const safely = (f: () => Date): number | undefined => Result.getOrUndefined(Result.map(Result.try(f), (date) => date.getTime()))

/** The first occurrence strictly after `afterMs`; undefined when there is none (a single time already passed). */
export const occurrenceAfter = (when: When, createdMs: number, afterMs: number): number | undefined => {
  switch (when._tag) {
    case "Cron":
      return Result.match(cronOf(when.expression, when.zone), {
        onFailure: () => undefined,
        onSuccess: (cron) => safely(() => Cron.next(cron, new Date(Math.max(afterMs, createdMs))))
      })
    case "Every": {
      const step = when.seconds * 1000
      const k = afterMs < createdMs ? 1 : Math.floor((afterMs - createdMs) / step) + 1
      return createdMs + k * step
    }
    case "At": {
      const at = instant(when.at)
      return at !== undefined && at > afterMs ? at : undefined
    }
  }
}

/** The latest occurrence at or before `nowMs` and after the entry's creation; undefined when there is none. */
export const occurrenceAtOrBefore = (when: When, createdMs: number, nowMs: number): number | undefined => {
  switch (when._tag) {
    case "Cron": {
      const latest = Result.match(cronOf(when.expression, when.zone), {
        onFailure: () => undefined,
        // prev is strict: a millisecond later finds an occurrence at `nowMs` itself.
        onSuccess: (cron) => safely(() => Cron.prev(cron, new Date(nowMs + 1)))
      })
      return latest !== undefined && latest > createdMs ? latest : undefined
    }
    case "Every": {
      const k = Math.floor((nowMs - createdMs) / (when.seconds * 1000))
      return k >= 1 ? createdMs + k * when.seconds * 1000 : undefined
    }
    case "At": {
      const at = instant(when.at)
      return at !== undefined && at <= nowMs ? at : undefined
    }
  }
}

/**
 * How far past now a recorded time (created, lastRun) may be and still be
 * trusted: a cluster's runners' clocks differ by less. One later than that
 * was written while the clock was ahead, and it has gone back since.
 */
export const CLOCK_SLACK_MS = 60_000

/** `ms`, or `nowMs` when `ms` is later than now by more than the slack. */
const trusted = (ms: number, nowMs: number): number => ms > nowMs + CLOCK_SLACK_MS ? nowMs : ms

/** Whether the entry's creation or last run is later than `nowMs` by more than the slack (the clock went back since). */
export const isAheadOf = (entry: Entry, nowMs: number): boolean =>
  [entry.created, entry.lastRun].some((text) => text !== undefined && (instant(text) ?? 0) > nowMs + CLOCK_SLACK_MS)

/**
 * Where an entry's counting starts: its last run, else its creation; at
 * `nowMs` when that is later than it (isAheadOf): a clock that went back
 * does not stop the entry until it catches up.
 */
export const baseOf = (entry: Entry, nowMs = Number.POSITIVE_INFINITY): number =>
  trusted(instant(entry.lastRun ?? entry.created) ?? 0, nowMs)

/**
 * The entry's next occurrence after its last run (or creation), counted
 * from `nowMs` when they are later than it (baseOf); undefined once a
 * single time has fired. Without `nowMs`, as recorded.
 */
export const nextOf = (entry: Entry, nowMs = Number.POSITIVE_INFINITY): number | undefined =>
  occurrenceAfter(entry.when, trusted(instant(entry.created) ?? 0, nowMs), baseOf(entry, nowMs))

/** The entry's `when`, in the words of `schedule add`. */
export const describeWhen = (when: When): string => {
  switch (when._tag) {
    case "Cron":
      return `cron "${when.expression}" (${when.zone})`
    case "Every":
      return `every ${formatSeconds(when.seconds)}`
    case "At":
      return `at ${when.at}`
  }
}

/** 90 → `1m30s`. */
export const formatSeconds = (seconds: number): string => {
  const units = [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]] as const
  let left = seconds
  let text = ""
  for (const [unit, size] of units) {
    const n = Math.floor(left / size)
    if (n > 0) text += `${n}${unit}`
    left -= n * size
  }
  return text === "" ? "0s" : text
}
