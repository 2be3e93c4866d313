/**
 * A message to an agent of a host, and its checks, defined once. The HTTP
 * API decodes a request with these Schemas (HttpApiDefinition: the id, the
 * Idempotency-Key header, the body with `payload`); Discord's routes and an
 * embedder's `AgentHost.send` go through `decoder`, made of the same ones.
 * What passes is a `HostMessage`, branded to say it was checked: a host
 * takes it as it is (AgentHostService.sendChecked). The Schemas themselves
 * are not branded, so the typed client (HttpApiClientOf) takes plain strings.
 */
import type * as Brand from "effect/Brand"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { isBlank } from "../../ports/Interact.js"
import { loneSurrogateProblem } from "../../runtime/WellFormed.js"
import * as AgentId from "./AgentId.js"
import { HostError, type HostErrorReason } from "./HostError.js"
import { KEY_RULE, validKey } from "./IdempotencyStore.js"

/** What an embedder or a bridge sends, before its checks. */
export interface SendOptions {
  readonly text: string
  /** Where the message came from (a Discord channel, "http"); default "http". */
  readonly channel?: string | undefined
  /** The same key for the same agent gives the same reply without a second turn, also after a restart. */
  readonly idempotencyKey?: string | undefined
}

/**
 * The refusal a failed check is answered with, where it is not the one
 * its place implies (HTTP: 400 bad-body for the body; a host: bad-input).
 */
const refusal = (reason: HostErrorReason) => ({ refusal: reason })

/** A text field whose lone UTF-16 surrogate (half an emoji) is refused: the model's API would refuse it. */
const wellFormed = (field: string) =>
  Schema.makeFilter((text: string) => {
    const broken = loneSurrogateProblem(text)
    return broken === undefined || `"${field}" ${broken}: send the character whole (both halves) or not at all`
  })

/** The text of a message, at most `maxBytes` bytes of UTF-8 (PLANCKCLAW_MAX_MESSAGE_BYTES). */
export const Text = (maxBytes: number) =>
  Schema.String.annotate({ message: "the body needs \"text\", a string" }).check(
    // The agent would send no reply to it (Interact.isBlank): refused here, before anything is journaled.
    Schema.makeFilter((text) => !isBlank(text) || "\"text\" is blank: there is nothing to answer"),
    wellFormed("text"),
    Schema.makeFilter((text) => {
      const size = Buffer.byteLength(text, "utf8")
      return size <= maxBytes || `the message is ${size} bytes; the limit is ${maxBytes} (the host's PLANCKCLAW_MAX_MESSAGE_BYTES)`
    }, refusal("too-large"))
  )

// Visible characters, spaces and tabs only: the journal keeps a key after a control character.
const CHANNEL_RULE = "1 to 256 characters without control characters"

export const Channel = Schema.String.annotate({ message: "\"channel\" must be a string" }).check(
  wellFormed("channel"),
  Schema.makeFilter(
    (channel) => (channel.length > 0 && channel.length <= 256 && !/[\u0000-\u001f\u007f]/.test(channel)) || `channel must be ${CHANNEL_RULE}`,
    refusal("bad-input")
  )
)

export const IdempotencyKey = Schema.String.check(
  Schema.makeFilter((key) => validKey(key) || `Idempotency-Key must be ${KEY_RULE}`, refusal("bad-input"))
)

/** The body of POST /v1/agents/{id}/messages. */
export const payload = (maxBytes: number) =>
  Schema.Struct({
    text: Text(maxBytes).annotateKey({
      messageMissingKey: "the body needs \"text\", a string",
      description: "The message (at most PLANCKCLAW_MAX_MESSAGE_BYTES bytes of UTF-8)"
    }),
    channel: Schema.optionalKey(Channel).annotateKey({ description: `Where the message came from: ${CHANNEL_RULE} (default "http")` })
  }).annotate({ message: "the body must be a JSON object" })

/** A message every check has passed: what a host takes. */
export type HostMessage = {
  readonly id: AgentId.AgentId
  readonly text: string
  readonly channel: string
  readonly idempotencyKey?: string | undefined
} & Brand.Brand<"HostMessage">

/**
 * A message of parts already checked by the Schemas above: the HTTP API's
 * id (AgentId's rule), Idempotency-Key header and body, each decoded by its
 * route's Schema. Called with anything else, it would pass what no check saw.
 */
export const ofCheckedParts = (
  id: string,
  body: { readonly text: string; readonly channel?: string | undefined },
  idempotencyKey: string | undefined
): HostMessage => ({ id: id as AgentId.AgentId, text: body.text, channel: body.channel ?? "http", idempotencyKey }) as HostMessage

const formatIssue = SchemaIssue.makeFormatterStandardSchemaV1()

/** What the first failure of a decoding says, and where (the key of an object, if any). */
export const firstIssue = (issue: SchemaIssue.Issue): { readonly message: string; readonly key: string | undefined } => {
  const first = formatIssue(issue).issues[0]
  const key = first?.path?.[0]
  return { message: (first?.message ?? "the request could not be read").slice(0, 500), key: typeof key === "string" ? key : undefined }
}

/** The refusal a failed check carries (`refusal` above), if any: decoding stops at the first. */
export const refusalOf = (issue: SchemaIssue.Issue): HostErrorReason | undefined => {
  if (issue._tag === "Filter") {
    const reason = issue.filter.annotations?.["refusal"] as HostErrorReason | undefined
    if (reason !== undefined) return reason
  }
  const inner = "issue" in issue ? issue.issue : "issues" in issue ? issue.issues[0] : undefined
  return inner === undefined || typeof inner !== "object" ? undefined : refusalOf(inner as SchemaIssue.Issue)
}

/** Why a message's parts were refused: the refusal a host answers, and what was wrong. */
export interface PartsRefused {
  readonly reason: HostErrorReason
  readonly message: string
}

/**
 * The checks of a message's text, channel and key, without its agent: what
 * `decoder` checks after the id, and all that `planckclaw mcp`'s ask_agent
 * (one agent, no id) checks.
 */
export const partsChecker = (maxBytes: number) => {
  const decodeParts = Schema.decodeUnknownResult(Schema.Struct({
    text: Text(maxBytes),
    channel: Schema.optional(Channel),
    idempotencyKey: Schema.optional(IdempotencyKey)
  }))
  return (message: SendOptions): Result.Result<SendOptions, PartsRefused> =>
    Result.mapError(decodeParts(message), ({ issue }) => ({ reason: refusalOf(issue) ?? "bad-input", message: firstIssue(issue).message }))
}

/** The checks of a message sent by a bridge or an embedder: the same Schemas, refused as a host refuses. */
export const decoder = (maxBytes: number) => {
  const checkParts = partsChecker(maxBytes)
  return (rawId: string, message: SendOptions): Effect.Effect<HostMessage, HostError> => {
    const id = AgentId.parse(rawId)
    if (Result.isFailure(id)) return Effect.fail(new HostError({ reason: "bad-id", id: rawId, message: id.failure.message }))
    const parts = checkParts(message)
    if (Result.isFailure(parts)) return Effect.fail(new HostError({ ...parts.failure, id: id.success }))
    return Effect.succeed(ofCheckedParts(id.success, parts.success, parts.success.idempotencyKey))
  }
}
