/**
 * The HTTP API as a contract (effect/http-api): each route, what it takes and
 * answers as Schemas, its refusals with their statuses (HttpApiErrors), and
 * the bearer token. A message is checked here, once, as its id, header and
 * payload are decoded (the Schemas of HostMessage): the server
 * (HttpApiHandlers) answers a decoding failure with the message the failing
 * Schema carries, and hands the host the checked message. Nothing of the server is imported: the
 * typed client (HttpApiClientOf) and the OpenAPI document are made from this.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import * as OpenApi from "effect/http-api/OpenApi"
import * as AgentId from "./AgentId.js"
import * as AgentStatus from "./AgentStatus.js"
import * as HostMessage from "./HostMessage.js"
import * as Errors from "./HttpApiErrors.js"
import * as HttpApiAgUi from "./HttpApiAgUi.js"
import * as HttpApiRecords from "./HttpApiRecords.js"
import type * as WireShapes from "./WireShapes.js"

/** What the GET /v1/agents query says of a parameter it does not take (HttpRequestChecks names it). */
export const UNKNOWN_QUERY_PARAMETER = "unknown query parameter"

/** A string a query may hold once: given twice it arrives as an array. */
const once = Schema.String.annotate({ message: "limit, after and search may each be given once" })

/** An agent id, refused with a message naming the id and the rule. */
const agentId = (prefix: string) =>
  Schema.makeFilter((raw: string) =>
    Result.match(AgentId.parse(raw), { onFailure: (refused) => `${prefix}${refused.message}`, onSuccess: () => true }), {
    description: "lowercase letters, digits, '.', '_', '-'; at most 64; starting with a letter or digit",
    toJsonSchema: () => ({ pattern: `^${AgentId.RULE}$` })
  })

const limit = once.check(Schema.makeFilter((raw) => {
  const size = /^\d{1,4}$/.test(raw) ? Number(raw) : Number.NaN
  return (size >= 1 && size <= AgentStatus.PAGE_LIMIT_MAX) ||
    `limit must be an integer from 1 to ${AgentStatus.PAGE_LIMIT_MAX}, got ${JSON.stringify(raw.slice(0, 40))}`
}, { description: `Agents in the page: 1 to ${AgentStatus.PAGE_LIMIT_MAX} (default ${AgentStatus.PAGE_LIMIT_DEFAULT})`, toJsonSchema: () => ({ pattern: "^[0-9]{1,4}$" }) }))

/**
 * POST /v1/agents/{id}/messages: what the agent is sent (HostMessage.payload). The server decodes it with the
 * limit it was started with (PLANCKCLAW_MAX_MESSAGE_BYTES); the contract states the limit by name only.
 */
export const MessagePayload = HostMessage.payload(Number.MAX_SAFE_INTEGER)

export const MessageHeaders = Schema.Struct({
  "idempotency-key": Schema.optionalKey(HostMessage.IdempotencyKey).annotateKey({
    description: "The same key for the same agent gives the same reply without a second turn, also after a restart"
  }),
  accept: Schema.optionalKey(Schema.String).annotateKey({
    description: "text/event-stream: the turn is told as it goes, as server-sent events ending with `end`; otherwise the reply as JSON"
  })
})

export const Reply = Schema.Struct({
  reply: Schema.String,
  stored: Schema.Boolean.annotate({ description: "Whether the exchange is in the agent's memory" })
})

/** One server-sent event of a message's stream: its name, and its data as JSON. */
const sseEvent = <const Name extends string, S extends Schema.Top>(event: Name, data: S, description: string) =>
  Schema.Struct({ event: Schema.Literal(event), data: Schema.fromJsonString(Schema.toCodecJson(data)) }).annotate({ description })

/** The stream's last event: the reply, and whether its turn was cancelled. */
export const End = Schema.Struct({
  ...Reply.fields,
  cancelled: Schema.Boolean.annotate({
    description: "Whether the turn was cancelled (POST /v1/agents/{id}/cancel): a model's reply with the same words is not"
  })
})

/** The first event of a message's stream: the agent has taken the message. */
export const Accepted = Schema.Struct({
  key: Schema.NullOr(Schema.String).annotate({ description: "The Idempotency-Key it was sent under (null: none), under which a retry gets its reply" })
})

/** What POST /v1/agents/{id}/messages tells, with `Accept: text/event-stream`, as the turn goes. */
export const MessageEvent = Schema.Union([
  sseEvent(
    "accepted",
    Accepted,
    "Always first, sent (with the 200) as soon as the message is journaled: it will be answered, also after a stop or a lost connection"
  ),
  sseEvent("text", Schema.Struct({ text: Schema.String }), "Text the model wrote, as it writes it"),
  sseEvent("tool", Schema.Struct({ name: Schema.String, input: Schema.Unknown }), "A tool call the model made, before it runs"),
  sseEvent("tool-result", Schema.Struct({ name: Schema.String, ok: Schema.Boolean, ms: Schema.Finite }), "A tool call's outcome and duration"),
  sseEvent("end", End, "The reply, as the JSON answer gives it, and whether the turn was cancelled: always the last event")
])
export type MessageEvent = typeof MessageEvent.Type

// The web console reads these answers as WireShapes' types: a change here must be made there too.
true satisfies WireShapes.Same<typeof Reply.Type, WireShapes.Reply>
true satisfies WireShapes.Same<typeof End.Type, WireShapes.End>
true satisfies WireShapes.Same<MessageEvent, WireShapes.TurnEvent>

/** The message's answer as server-sent events; a comment every 15 s keeps a quiet connection (a long tool call) open. */
export const MessageEvents = HttpApiSchema.StreamSse({ events: MessageEvent, keepAlive: "15 seconds" })

export const AgentInfo = Schema.Struct({
  id: Schema.String,
  historyLines: Schema.Int,
  summaryBytes: Schema.Int,
  lastMessageAt: Schema.NullOr(Schema.String).annotate({ description: "ISO 8601; null when never" }),
  state: Schema.Literals(["running", "released"]),
  today: Schema.optionalKey(Schema.Struct({ tokens: Schema.Int, cost: Schema.NullOr(Schema.Number) }))
    .annotateKey({ description: "Today's usage (UTC) from its ledger: every token, and the estimated cost (null: a model without a price)" })
})

true satisfies WireShapes.Same<typeof AgentInfo.Type, WireShapes.AgentInfo>

export const AgentList = Schema.Struct({
  agents: Schema.Array(AgentInfo),
  next: Schema.NullOr(Schema.String).annotate({ description: "The `after` of the next page; null on the last" })
})

export const CompactResult = Schema.Struct({
  compacted: Schema.Boolean,
  summarised: Schema.Int,
  kept: Schema.Int,
  summaryBytes: Schema.Int
})

/** The bearer token (PLANCKCLAW_HTTP_TOKEN) on every route but /v1/health; without one set, none is asked. */
export class Authorization extends HttpApiMiddleware.Service<Authorization>()("planckclaw/HttpApi/Authorization", {
  security: { bearer: HttpApiSecurity.bearer },
  error: Errors.Unauthorized
}) {}

const idParams = { id: Schema.String.check(agentId("")) }

export class HealthGroup extends HttpApiGroup.make("health", { topLevel: true }).add(
  HttpApiEndpoint.get("health", "/v1/health", {
    success: Schema.Struct({ status: Schema.Literal("ok") }),
    error: Errors.Always
  }).annotate(OpenApi.Description, "Whether the server answers; needs no token")
) {}

export class AgentsGroup extends HttpApiGroup.make("agents").add(
  HttpApiEndpoint.get("list", "/v1/agents", {
    query: Schema.Struct({
      limit: Schema.optionalKey(limit),
      after: Schema.optionalKey(once.check(agentId("after: "))),
      search: Schema.optionalKey(once.annotate({ description: "Only the agents whose id holds this text" }))
    })
      .annotate({ messageUnexpectedKey: UNKNOWN_QUERY_PARAMETER }),
    success: AgentList,
    error: Errors.ListErrors
  }).annotate(OpenApi.Description, "A page of the agents, in id order").annotate(HttpApi.QueryParseOptions, { onExcessProperty: "error" }),
  HttpApiEndpoint.get("get", "/v1/agents/:id", { params: idParams, success: AgentInfo, error: Errors.GetErrors })
    .annotate(OpenApi.Description, "One agent, read from its directory without starting it"),
  HttpApiEndpoint.post("send", "/v1/agents/:id/messages", {
    params: idParams,
    headers: MessageHeaders,
    payload: MessagePayload,
    // JSON, or with Accept: text/event-stream the turn as it goes.
    success: [Reply, MessageEvents],
    // The body must be JSON in UTF-8, and is read only up to its limit (PLANCKCLAW_MAX_MESSAGE_BYTES).
    error: Errors.SendErrors
  })
    .annotate(
      OpenApi.Description,
      "Sends a message to the agent (started if released, created if new) and waits for its reply; with Accept: text/event-stream, tells the turn as it goes"
    ),
  HttpApiEndpoint.post("cancel", "/v1/agents/:id/cancel", {
    params: idParams,
    headers: Schema.Struct({
      "idempotency-key": HostMessage.IdempotencyKey.annotate({ description: "The key the message was sent with" }).annotateKey({
        messageMissingKey: "a cancel needs the Idempotency-Key header the message was sent with"
      })
    }),
    success: Schema.Struct({ cancelled: Schema.Boolean.annotate({ description: "Whether its turn was running or queued (false: answered already, or unknown)" }) }),
    error: Errors.GetErrors
  }).annotate(OpenApi.Description, "Cancels the turn of the message sent under this Idempotency-Key: its caller is answered that it was cancelled, nothing is stored"),
  HttpApiEndpoint.post("compact", "/v1/agents/:id/compact", { params: idParams, success: CompactResult, error: Errors.CompactErrors })
    .annotate(OpenApi.Description, "Compacts the agent's memory now, whatever the length of its history")
).middleware(Authorization) {}

export class DocsGroup extends HttpApiGroup.make("docs").add(
  HttpApiEndpoint.get("openapi", "/v1/openapi.json", {
    success: Schema.Record(Schema.String, Schema.Unknown).annotate({ description: "An OpenAPI 3 document" }),
    error: Errors.Always
  }).annotate(OpenApi.Description, "This document"),
  HttpApiEndpoint.get("reference", "/v1/docs", {
    success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" })),
    error: Errors.Always
  }).annotate(OpenApi.Description, "This document as a web page: self-contained, no script")
).middleware(Authorization) {}

export class RecordsGroup extends HttpApiRecords.makeGroup(idParams).middleware(Authorization) {}

export class AgUiGroup extends HttpApiAgUi.makeGroup(idParams).middleware(Authorization) {}

export class Api extends HttpApi.make("planckclaw").add(HealthGroup).add(AgentsGroup).add(RecordsGroup).add(AgUiGroup).add(DocsGroup).annotateMerge(
  OpenApi.annotations({
    title: "PlanckClaw",
    description: "The agent host of `planckclaw serve`: many agents, each a directory, each answering its messages in order."
  })
) {}
