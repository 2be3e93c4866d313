/**
 * The schedule as tools the model can call, in process beside the claws:
 * `schedule_add`, `schedule_list` and `schedule_remove` on its own agent's
 * schedules.json ("remind me at 9" in chat becomes an entry). What it asks
 * is read as `schedule add` reads it, and a refusal is a tool error with the
 * reason, for the model to say or correct. A change wakes the host's runner.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { ClawsService, ToolDefinition, ToolResult } from "../ports/Claws.js"
import * as ScheduleEntry from "./ScheduleEntry.js"
import * as ScheduleInput from "./ScheduleInput.js"
import * as ScheduleStore from "./ScheduleStore.js"

export const ADD = "schedule_add"
export const LIST = "schedule_list"
export const REMOVE = "schedule_remove"

export interface ToolOptions {
  /** The agent's schedule (ScheduleStore.fileStore of its schedules.json, or the cluster's row). */
  readonly store: ScheduleStore.Store
  /** Tells the host's runner the file changed. */
  readonly changed: Effect.Effect<void>
  /** Where a reply goes when the model names no destination (the host's terminal, say). */
  readonly defaultTo: string
  /** Whether this host can deliver to a Discord channel (it has a Discord bridge). */
  readonly discord: boolean
  /** Whether this host has a terminal to print a reply on (`run` on the terminal; not serve, the cluster or another bridge). */
  readonly terminal: boolean
  /** The agent's PLANCKCLAW_MAX_MESSAGE_BYTES (its host's, if lower): a longer scheduled message is refused when added. */
  readonly maxMessageBytes: number
}

const text = (description: string) => ({ type: "string", description })

/** The tools' declarations, as the model sees them. */
export const definitions = (zone: string | undefined): ReadonlyArray<ToolDefinition> => [
  {
    name: ADD,
    description: "Schedule a message to yourself: at that time you receive `text` as a new message and your reply " +
      "goes to `to`. Use it for reminders (\"remind me at 9\": at \"09:00\"; \"in 10 minutes\": at \"+10m\"), " +
      "recurring digests (cron) and checks (every). Give exactly one of cron, every, at.",
    input_schema: {
      type: "object",
      properties: {
        text: text("what you will receive then, written as an instruction to yourself, e.g. 'Remind the user to call the bank.'"),
        cron: text("a cron expression: 5 fields (minute hour day month weekday) or 6 with seconds first"),
        every: text("an interval from now: 30s, 5m, 1h30m, 2d"),
        at: text("once: +10m (from now), 09:00 (its next coming), 2026-12-24 09:00, or an ISO 8601 instant with offset"),
        tz: text(`the IANA time zone of cron or of a wall-clock at; ${zone === undefined ? "needed for them: this machine's zone has no IANA name" : `default ${zone}`}`),
        to: text("where the reply goes: terminal, discord:CHANNEL_ID, webhook:URL or none (memory only); default: where this host talks")
      },
      required: ["text"]
    }
  },
  {
    name: LIST,
    description: "List your scheduled messages, each with its id, when, next run, last run and destination; and the time now.",
    input_schema: { type: "object", properties: {} }
  },
  {
    name: REMOVE,
    description: "Remove one of your scheduled messages by its id (as schedule_list shows it).",
    input_schema: { type: "object", properties: { id: text("the entry's id") }, required: ["id"] }
  }
]

const AddInput = Schema.Struct({
  text: Schema.String,
  cron: Schema.optionalKey(Schema.String),
  every: Schema.optionalKey(Schema.String),
  at: Schema.optionalKey(Schema.String),
  tz: Schema.optionalKey(Schema.String),
  to: Schema.optionalKey(Schema.String)
})
const RemoveInput = Schema.Struct({ id: Schema.String })

const ok = (content: string): ToolResult => ({ content, isError: false })
const refused = (content: string): ToolResult => ({ content, isError: true })
const iso = (ms: number | undefined) => ms === undefined ? "none" : ScheduleEntry.formatInstant(ms)

const describeEntry = (entry: ScheduleEntry.Entry, now: number) =>
  `${entry.id}: ${ScheduleEntry.describeWhen(entry.when)}, next ${iso(ScheduleEntry.nextOf(entry, now))}, ` +
  `last ${entry.lastRun ?? "never"}, to ${entry.to}: ${JSON.stringify(entry.text)}`

/** Runs one of the schedule tools; the store's refusals and failures become tool errors with the reason. */
const run = (options: ToolOptions, name: string, input: unknown): Effect.Effect<ToolResult> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    if (name === LIST) {
      const entries = yield* options.store.read
      const lines = entries.length === 0 ? ["no scheduled messages"] : entries.map((entry) => describeEntry(entry, now))
      return ok([`now: ${iso(now)} (this machine's zone: ${ScheduleInput.localZone() ?? "one with no IANA name: give tz"})`, ...lines].join("\n"))
    }
    if (name === REMOVE) {
      const decoded = Schema.decodeUnknownResult(RemoveInput)(input)
      if (Result.isFailure(decoded)) return refused("schedule_remove needs {\"id\": \"...\"}")
      const removed = yield* options.store.modify(ScheduleStore.removing(decoded.success.id, "your schedule"))
      yield* options.changed
      return ok(`removed ${describeEntry(removed, now)}`)
    }
    const decoded = Schema.decodeUnknownResult(AddInput)(input)
    if (Result.isFailure(decoded)) return refused("schedule_add needs {\"text\": \"...\"} and one of cron, every, at, as strings")
    const request = decoded.success
    const when = ScheduleInput.parseWhen(request, now)
    if (Result.isFailure(when)) return refused(when.failure.replace("--cron, --every or --at", "cron, every or at").replace("--tz", "tz"))
    // As `schedule add --tz` with `--every`: a zone the entry would not keep is refused, not silently dropped.
    if (request.tz !== undefined && when.success._tag === "Every") {
      return refused("tz goes with cron or a wall-clock at, not every (an interval counts from now, whatever the zone): leave tz out, or use cron with tz")
    }
    const to = request.to ?? options.defaultTo
    const destination = ScheduleEntry.parseDestination(to)
    if (Result.isFailure(destination)) return refused(destination.failure)
    if (destination.success._tag === "Terminal" && !options.terminal) {
      return refused(`${to}: this agent has no terminal to print the reply on: use to ${options.discord ? "discord:CHANNEL_ID, " : ""}webhook:URL or none (memory only)`)
    }
    if (destination.success._tag === "Discord" && !options.discord) {
      return refused(`${to}: this agent runs without a Discord bridge, so nothing could deliver there`)
    }
    const entry = yield* options.store.modify(ScheduleStore.adding({ when: when.success, text: request.text, to }, now, options.maxMessageBytes))
    yield* options.changed
    return ok(`scheduled ${describeEntry(entry, now)} (now: ${iso(now)})`)
  }).pipe(Effect.catchTag("ScheduleError", (error) => Effect.succeed(refused(error.message))))

let lastDefinitions: { readonly zone: string | undefined; readonly tools: ReadonlyArray<ToolDefinition>; readonly names: ReadonlySet<string> } | undefined

/** `definitions` of the machine's zone, the same objects for every agent while the zone is the same (their specs' JSON is then made once). */
const localDefinitions = () => {
  const zone = ScheduleInput.localZone()
  if (lastDefinitions === undefined || lastDefinitions.zone !== zone) {
    const tools = definitions(zone)
    lastDefinitions = { zone, tools, names: new Set(tools.map((tool) => tool.name)) }
  }
  return lastDefinitions
}

/** `claws` with the schedule tools beside its own (which keep their names; a claw's tool of the same name is hidden). */
export const withScheduleTools = (claws: ClawsService, options: ToolOptions): ClawsService => {
  const { names, tools: ours } = localDefinitions()
  const extended = <E>(list: Effect.Effect<{ readonly tools: ReadonlyArray<ToolDefinition>; readonly problems: ReadonlyArray<{ readonly source: string; readonly reason: string }> }, E>) =>
    Effect.map(list, (catalog) => ({ ...catalog, tools: [...catalog.tools.filter((tool) => !names.has(tool.name)), ...ours] }))
  return {
    list: extended(claws.list),
    ...(claws.listOnRequest === undefined ? {} : { listOnRequest: extended(claws.listOnRequest) }),
    call: (name, input) => names.has(name) ? run(options, name, input) : claws.call(name, input)
  }
}
