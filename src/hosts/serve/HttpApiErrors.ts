/**
 * What the HTTP API answers when it refuses: one error class per status,
 * each a JSON body `{"error": <code>, "message": <what was wrong>}` (the
 * code says which refusal it is; the message is for a person, bounded in
 * length). The server fails with these, the typed client decodes them, and
 * the OpenAPI document lists them.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { HostError } from "./HostError.js"

const message = Schema.String.annotate({ description: "What was wrong, for a person to read" })

export class BadRequest extends Schema.Error<BadRequest>("BadRequest")({
  error: Schema.Literals(["bad-id", "bad-input", "bad-body", "bad-json", "bad-query"]),
  message
}, { httpApiStatus: 400, description: "The request is malformed: the agent id, a header, the body or the query" }) {}

export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")({
  error: Schema.Literal("unauthorized"),
  message
}, { httpApiStatus: 401, description: "PLANCKCLAW_HTTP_TOKEN is set and the request does not carry it as a bearer token" }) {}

export class Forbidden extends Schema.Error<Forbidden>("Forbidden")({
  error: Schema.Literals(["cross-origin", "bad-host"]),
  message
}, {
  httpApiStatus: 403,
  description: "A request from a web page (with an Origin header), or, without a token, one whose Host is not loopback"
}) {}

export class NotFound extends Schema.Error<NotFound>("NotFound")({
  error: Schema.Literal("not-found"),
  message
}, { httpApiStatus: 404, description: "No agent of that id" }) {}

export class Conflict extends Schema.Error<Conflict>("Conflict")({
  error: Schema.Literal("busy"),
  message
}, { httpApiStatus: 409, description: "Another compaction holds the agent's memory" }) {}

export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")({
  error: Schema.Literal("too-large"),
  message
}, {
  httpApiStatus: 413,
  description: "The message is over PLANCKCLAW_MAX_MESSAGE_BYTES (the host's, or the agent's own lower one), or the body over the route's limit"
}) {}

export class UnsupportedMediaType extends Schema.Error<UnsupportedMediaType>("UnsupportedMediaType")({
  error: Schema.Literal("unsupported-media-type"),
  message
}, { httpApiStatus: 415, description: "The body is not sent as application/json (UTF-8), or is sent compressed (a Content-Encoding)" }) {}

export class UnprocessableEntity extends Schema.Error<UnprocessableEntity>("UnprocessableEntity")({
  error: Schema.Literal("key-reused"),
  message
}, { httpApiStatus: 422, description: "The Idempotency-Key was already used for another message" }) {}

export class BadGateway extends Schema.Error<BadGateway>("BadGateway")({
  error: Schema.Literal("failed"),
  message
}, { httpApiStatus: 502, description: "The compaction failed (the model's API, the disk)" }) {}

export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("ServiceUnavailable")({
  error: Schema.Literals(["unavailable", "stopping", "too-many-connections"]),
  message
}, {
  httpApiStatus: 503,
  description: "The agent could not be started, the server is stopping, or it holds its limit of connections"
}) {}

export class InsufficientStorage extends Schema.Error<InsufficientStorage>("InsufficientStorage")({
  error: Schema.Literal("no-space"),
  message
}, { httpApiStatus: 507, description: "The agent's disk is full: the message was not taken" }) {}

/** What any route may answer before it runs (HttpRequestChecks, HttpConnections). */
export const Always = [Forbidden, ServiceUnavailable] as const

// What each route that asks the agent host may answer (ServiceUnavailable: the host could not read or start the agent).
export const ListErrors = [...Always, BadRequest] as const
export const GetErrors = [...Always, BadRequest, NotFound] as const
export const CompactErrors = [...Always, BadRequest, NotFound, Conflict, BadGateway, InsufficientStorage] as const
export const SendErrors = [...Always, BadRequest, PayloadTooLarge, UnsupportedMediaType, UnprocessableEntity, InsufficientStorage] as const

export type HostProblem =
  | BadRequest
  | NotFound
  | Conflict
  | PayloadTooLarge
  | UnprocessableEntity
  | BadGateway
  | ServiceUnavailable
  | InsufficientStorage

/** The host's refusal as the API answers it: its reason is the body's `error`. */
export const fromHost = (error: HostError): HostProblem => {
  const { message } = error
  switch (error.reason) {
    case "bad-id":
    case "bad-input":
    case "bad-query":
      return new BadRequest({ error: error.reason, message })
    case "too-large":
      return new PayloadTooLarge({ error: "too-large", message })
    case "not-found":
      return new NotFound({ error: "not-found", message })
    case "unavailable":
      return new ServiceUnavailable({ error: "unavailable", message })
    case "busy":
      return new Conflict({ error: "busy", message })
    case "failed":
      return new BadGateway({ error: "failed", message })
    case "key-reused":
      return new UnprocessableEntity({ error: "key-reused", message })
    case "no-space":
      return new InsufficientStorage({ error: "no-space", message })
  }
}

type ProblemClass = new(...args: ReadonlyArray<never>) => HostProblem | UnsupportedMediaType | Forbidden

/**
 * `fromHost`, for a route that declares `classes`: the host refuses it for
 * no other reason, so another would be a defect (a 500) rather than an
 * answer the OpenAPI document does not list.
 */
export const fromHostAmong = <const Classes extends ReadonlyArray<ProblemClass>>(classes: Classes) =>
(error: HostError): Effect.Effect<never, Extract<HostProblem, InstanceType<Classes[number]>>> => {
  const problem = fromHost(error)
  return classes.some((declared) => problem instanceof declared)
    ? Effect.fail(problem as Extract<HostProblem, InstanceType<Classes[number]>>)
    : Effect.die(problem)
}
