/**
 * The routes that read an agent's records without starting it, as a
 * contract (HttpApiDefinition adds the group): a page of its history,
 * newest first, and the usage ledgers, one agent's or all of them per agent
 * and day, for a period; its soul and summary; its schedule.
 */
import * as Schema from "effect/Schema"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import * as ScheduleEntry from "../../schedule/ScheduleEntry.js"
import * as UsageReport from "../../usage/UsageReport.js"
import { HISTORY_LIMIT_DEFAULT, HISTORY_LIMIT_MAX } from "./AgentRecords.js"
import * as Errors from "./HttpApiErrors.js"
import type * as WireShapes from "./WireShapes.js"

const once = (name: string) => Schema.String.annotate({ message: `${name} may be given once` })

const historyLimit = once("limit").check(Schema.makeFilter((raw) => {
  const size = /^\d{1,4}$/.test(raw) ? Number(raw) : Number.NaN
  return (size >= 1 && size <= HISTORY_LIMIT_MAX) || `limit must be an integer from 1 to ${HISTORY_LIMIT_MAX}, got ${JSON.stringify(raw.slice(0, 40))}`
}, { description: `Exchanges in the page: 1 to ${HISTORY_LIMIT_MAX} (default ${HISTORY_LIMIT_DEFAULT})`, toJsonSchema: () => ({ pattern: "^[0-9]{1,4}$" }) }))

const before = once("before").check(Schema.makeFilter(
  (raw) => /^\d{1,15}$/.test(raw) || `before must be the \`next\` of a page (a whole number), got ${JSON.stringify(raw.slice(0, 40))}`,
  { description: "The `next` of the previous page (or an entry's `at`): the entries before that position (without --cluster, one inside a line of history.jsonl is a 400)", toJsonSchema: () => ({ pattern: "^[0-9]{1,15}$" }) }
))

const day = (name: string) =>
  once(name).check(Schema.makeFilter((raw) => UsageReport.isDay(raw) || `${name} must be a date as YYYY-MM-DD, got ${JSON.stringify(raw.slice(0, 40))}`, {
    description: `A day (UTC), YYYY-MM-DD, ${name === "since" ? "the first" : "the last"} of the period`,
    toJsonSchema: () => ({ pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" })
  }))

export const PeriodQuery = Schema.Struct({ since: Schema.optionalKey(day("since")), until: Schema.optionalKey(day("until")) })
  .annotate({ messageUnexpectedKey: "unknown query parameter: this route takes since and until" })
  .check(Schema.makeFilter((query) => UsageReport.periodProblem(query.since, query.until, { since: "since", until: "until" }) ?? true))

export const HistoryQuery = Schema.Struct({ before: Schema.optionalKey(before), limit: Schema.optionalKey(historyLimit) })
  .annotate({ messageUnexpectedKey: "unknown query parameter: this route takes before and limit" })

export const HistoryPage = Schema.Struct({
  entries: Schema.Array(Schema.Struct({
    at: Schema.Int.annotate({
      description: "The entry's position, to give as `before` (opaque: a byte offset of history.jsonl in `serve`, a row's sequence number with --cluster)"
    }),
    role: Schema.Literals(["user", "assistant"]),
    content: Schema.String
  })).annotate({ description: "Newest first" }),
  next: Schema.NullOr(Schema.Int).annotate({ description: "The `before` of the next, older page; null on the first line" })
})

const counts = {
  requests: Schema.Int,
  input: Schema.Int,
  output: Schema.Int,
  cache_write: Schema.Int,
  cache_read: Schema.Int,
  cost: Schema.NullOr(Schema.Number).annotate({ description: "Estimated US dollars; null when a model has no price" })
}

export const AgentUsage = Schema.Struct({
  since: Schema.NullOr(Schema.String),
  rows: Schema.Array(Schema.Struct({ day: Schema.String, model: Schema.String, ...counts })),
  total: Schema.Struct({ ...counts, cache_share: Schema.Number, unpriced: Schema.Array(Schema.String) }),
  skipped: Schema.Int.annotate({ description: "Ledger lines that could not be read (with a `since`, among those read: from the end back to that day)" })
})

export const AllUsage = Schema.Struct({
  since: Schema.NullOr(Schema.String),
  until: Schema.NullOr(Schema.String),
  rows: Schema.Array(Schema.Struct({ agent: Schema.String, day: Schema.String, ...counts })).annotate({ description: "By agent, then day" }),
  total: Schema.Struct(counts)
})

// The web console reads these answers as WireShapes' types: a change here must be made there too.
true satisfies WireShapes.Same<typeof HistoryPage.Type["entries"][number], WireShapes.HistoryEntry>
true satisfies WireShapes.Same<typeof AllUsage.Type, WireShapes.AllUsage>

export const MemoryText = Schema.Struct({ soul: Schema.String, summary: Schema.String })

export const ScheduleList = Schema.Struct({
  entries: Schema.Array(Schema.Struct({
    id: Schema.String,
    when: ScheduleEntry.When.annotate({ description: "As schedules.json holds it: a cron expression and its time zone, an interval in seconds, or one instant" }),
    written: Schema.String.annotate({ description: "`when` in the words of `planckclaw schedule list`" }),
    text: Schema.String.annotate({ description: "The message the agent receives" }),
    to: Schema.String.annotate({ description: "Where the reply goes: terminal, discord:CHANNEL_ID, webhook:URL or none" }),
    created: Schema.String,
    lastRun: Schema.NullOr(Schema.String).annotate({ description: "The occurrence it last fired for or skipped past (ISO 8601); null before its first" }),
    nextRun: Schema.NullOr(Schema.String).annotate({
      description: "The occurrence after the last run, or after its creation, counted from now when those are later than now (the clock went back) (ISO 8601); in the past when no host fired it then; null when there is none"
    })
  })).annotate({ description: "In the file's order; empty when the agent has no schedules.json" })
})

export const makeGroup = <Params extends Schema.Top>(idParams: { readonly id: Params }) =>
  HttpApiGroup.make("records").add(
    HttpApiEndpoint.get("history", "/v1/agents/:id/history", { params: idParams, query: HistoryQuery, success: HistoryPage, error: Errors.GetErrors })
      .annotate(OpenApi.Description, "A page of the agent's exchanges, newest first, read from the end of its history")
      .annotate(HttpApi.QueryParseOptions, { onExcessProperty: "error" }),
    HttpApiEndpoint.get("usage", "/v1/agents/:id/usage", { params: idParams, query: PeriodQuery, success: AgentUsage, error: Errors.GetErrors })
      .annotate(OpenApi.Description, "The agent's usage ledger for a period, per day and model, with an estimated cost")
      .annotate(HttpApi.QueryParseOptions, { onExcessProperty: "error" }),
    HttpApiEndpoint.get("memory", "/v1/agents/:id/memory", { params: idParams, success: MemoryText, error: Errors.GetErrors })
      .annotate(OpenApi.Description, "The agent's soul (its own, else the host's, else the built-in one) and summary, as they are on disk"),
    HttpApiEndpoint.get("schedules", "/v1/agents/:id/schedules", { params: idParams, success: ScheduleList, error: Errors.GetErrors })
      .annotate(OpenApi.Description, "The agent's schedule entries with their last and next runs; a schedule that does not decode (its schedules.json, or its row in the cluster) is a 503 naming it and the reason"),
    HttpApiEndpoint.get("usageAll", "/v1/usage", { query: PeriodQuery, success: AllUsage, error: Errors.ListErrors })
      .annotate(OpenApi.Description, "Every agent's usage for a period, per agent and day")
      .annotate(HttpApi.QueryParseOptions, { onExcessProperty: "error" })
  )
