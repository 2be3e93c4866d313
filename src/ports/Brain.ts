/**
 * The Brain port: Anthropic Messages API JSON in, Messages API JSON out,
 * whole (`complete`) or as it is written (`stream`). Implementations: the
 * Anthropic HTTP API, an OpenAI-compatible HTTP API, an external process
 * over FIFOs, a scripted brain for tests.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import type * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import { madeOnFirstCall } from "../runtime/FirstCall.js"
import { isJsonObject } from "../runtime/Json.js"

/**
 * A prompt-caching breakpoint (Anthropic): the API caches the request up to
 * and including the block that carries it. Other brains ignore it.
 */
export const CacheControl = Schema.Struct({ type: Schema.Literal("ephemeral") })
export type CacheControl = typeof CacheControl.Type

export const EPHEMERAL: CacheControl = { type: "ephemeral" }

export const TextBlock = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String,
  cache_control: Schema.optional(CacheControl)
})
export type TextBlock = typeof TextBlock.Type

export const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.Unknown
})
export type ToolUseBlock = typeof ToolUseBlock.Type

export const ToolResultBlock = Schema.Struct({
  type: Schema.Literal("tool_result"),
  tool_use_id: Schema.String,
  content: Schema.String,
  is_error: Schema.optional(Schema.Boolean)
})
export type ToolResultBlock = typeof ToolResultBlock.Type

/** Blocks the agent does not act on (thinking, server tools, …) are kept by type only. */
export const OtherBlock = Schema.Struct({ type: Schema.String })
export type OtherBlock = typeof OtherBlock.Type

export const ResponseBlock = Schema.Union([TextBlock, ToolUseBlock, OtherBlock])
export type ResponseBlock = typeof ResponseBlock.Type

export const MessageContent = Schema.Union([Schema.String, Schema.Array(Schema.Union([TextBlock, ToolUseBlock, ToolResultBlock]))])

export const Message = Schema.Struct({
  role: Schema.Literals(["user", "assistant"]),
  content: MessageContent
})
export type Message = typeof Message.Type

export const ToolSpec = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  input_schema: Schema.Record(Schema.String, Schema.Unknown),
  cache_control: Schema.optional(CacheControl)
})
export type ToolSpec = typeof ToolSpec.Type

/**
 * Fields in the order the API reads a prompt for caching (tools, system,
 * messages): a decoded request is written back in this order, so the bytes
 * of a cached prefix come first and stay the same from turn to turn.
 */
export const MessagesRequest = Schema.Struct({
  model: Schema.String,
  max_tokens: Schema.Number,
  tools: Schema.optional(Schema.Array(ToolSpec)),
  /** A string, or text blocks (so the system prompt can carry a cache breakpoint). */
  system: Schema.optional(Schema.Union([Schema.String, Schema.Array(TextBlock)])),
  messages: Schema.Array(Message)
})
export type MessagesRequest = typeof MessagesRequest.Type

/**
 * Token counts of one answer, in the Messages API's shape: `input_tokens`
 * excludes the cached parts (`cache_creation_input_tokens` written,
 * `cache_read_input_tokens` read). Local servers may send none.
 */
export const Usage = Schema.Struct({
  input_tokens: Schema.optional(Schema.NullOr(Schema.Number)),
  output_tokens: Schema.optional(Schema.NullOr(Schema.Number)),
  cache_creation_input_tokens: Schema.optional(Schema.NullOr(Schema.Number)),
  cache_read_input_tokens: Schema.optional(Schema.NullOr(Schema.Number))
})
export type Usage = typeof Usage.Type

export const MessagesResponse = Schema.Struct({
  id: Schema.optional(Schema.String),
  type: Schema.optional(Schema.String),
  role: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  content: Schema.Array(ResponseBlock),
  stop_reason: Schema.optional(Schema.NullOr(Schema.String)),
  usage: Schema.optional(Schema.NullOr(Usage))
})
export type MessagesResponse = typeof MessagesResponse.Type

/** The system prompt's text, whichever form it has. */
export const systemText = (system: MessagesRequest["system"]): string | undefined =>
  system === undefined ? undefined : typeof system === "string" ? system : system.map((block) => block.text).join("\n\n")

/**
 * What the user's settings got wrong, as a permanent answer showed it:
 * `problem` is the few words the user is told ("the API key was refused"),
 * `setting` the key to fix. Neither ever holds a secret or an address; an
 * unknown model's problem names it and the models the server offers.
 */
export const Misconfigured = Schema.Struct({ problem: Schema.String, setting: Schema.String })
export type Misconfigured = typeof Misconfigured.Type

/**
 * A brain that gave up. `reason` is what travels on the brain FIFO as
 * `{"error":"timeout"}` or `{"error":"fatal"}`; `detail` stays in this process.
 * A fatal failure caused by the settings (a refused key, an unknown model,
 * a request the API calls invalid) carries `misconfigured`, which travels as
 * an extra field of the error object: `{"error":"fatal","misconfigured":{…}}`
 * (a bridge that does not know it still fails, with the apology).
 */
export class BrainError extends Schema.TaggedError<BrainError>()("BrainError", {
  reason: Schema.Literals(["timeout", "fatal"]),
  detail: Schema.String,
  misconfigured: Schema.optional(Misconfigured)
}) {}

/**
 * What a streamed answer is made of: the text as the model writes it, then
 * the whole answer, always last and exactly once (the response `complete`
 * would have returned, text deltas included in its blocks).
 */
export type BrainEvent =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "Answer"; readonly response: MessagesResponse }

export const textDelta = (text: string): BrainEvent => ({ _tag: "TextDelta", text })
export const answerEvent = (response: MessagesResponse): BrainEvent => ({ _tag: "Answer", response })

export interface BrainService {
  readonly complete: (request: MessagesRequest) => Effect.Effect<MessagesResponse, BrainError>
  /**
   * The same answer as it is written, ending in its `Answer`. A brain without
   * it (the pipes, a script) answers in one piece: see `streamOf`. Whatever
   * wraps a brain (the usage ledger, a concurrency limit) passes it on.
   */
  readonly stream?: ((request: MessagesRequest) => Stream.Stream<BrainEvent, BrainError>) | undefined
}

/** `brain`'s stream of `request`: its own, or its complete answer as the one event. */
export const streamOf = (brain: BrainService, request: MessagesRequest): Stream.Stream<BrainEvent, BrainError> =>
  brain.stream !== undefined ? brain.stream(request) : Stream.fromEffect(Effect.map(brain.complete(request), answerEvent))

/**
 * `brain` with `onAnswer` run on each answer, whole or at the end of its
 * stream, given the request and when the call started: what a ledger wraps.
 */
export const tapAnswers = (
  brain: BrainService,
  onAnswer: (request: MessagesRequest, startedMillis: number, response: MessagesResponse) => Effect.Effect<void>
): BrainService => ({
  complete: (request) =>
    Effect.flatMap(Clock.currentTimeMillis, (started) => Effect.tap(brain.complete(request), (response) => onAnswer(request, started, response))),
  // A brain that answers only whole stays so: the turn then takes its cheaper way (complete).
  stream: brain.stream === undefined ? undefined : (request) =>
    Stream.unwrap(Effect.map(Clock.currentTimeMillis, (started) =>
      Stream.tap(streamOf(brain, request), (event) => event._tag === "Answer" ? onAnswer(request, started, event.response) : Effect.void)))
})

/** `brain` with each call holding one of `permits` until its answer is whole (a stream: until it ends). */
export const limitedBy = (brain: BrainService, permits: Semaphore.Semaphore): BrainService => ({
  complete: (request) => permits.withPermits(1)(brain.complete(request)),
  stream: brain.stream === undefined ? undefined : (request) => Stream.unwrap(Effect.as(permits.takeScoped(1), streamOf(brain, request)))
})

export class Brain extends Context.Service<Brain, BrainService>()("planckclaw/Brain") {}

const decodeResponse = madeOnFirstCall(() => Schema.decodeUnknownResult(MessagesResponse))
const decodeMisconfigured = madeOnFirstCall(() => Schema.decodeUnknownResult(Misconfigured))

/**
 * Whether an answer says it failed: a root-level `error` that is not null
 * (some servers send `"error": null` beside a good answer).
 */
export const answersError = (json: unknown): json is { readonly error: unknown } & Record<string, unknown> =>
  isJsonObject(json) && json.error !== undefined && json.error !== null

/** Takes the secrets out of a text; brains that hold none pass it through. */
export type Scrub = (text: string) => string
const keepAll: Scrub = (text) => text

/**
 * Reads a brain answer as it arrives on the wire (HTTP body or FIFO frame):
 * a root-level `error` (answersError) is a failure, anything else must be a Messages
 * API response. Every excerpt of the answer is scrubbed before it is cut:
 * a key cut in two no longer matches (decodeSparingUsage, oneLine too).
 */
export const decodeBrainAnswer = (raw: string, scrub: Scrub = keepAll): Effect.Effect<MessagesResponse, BrainError> => {
  const parsed = Result.try(() => JSON.parse(raw) as unknown)
  if (Result.isFailure(parsed)) {
    return Effect.fail(new BrainError({ reason: "fatal", detail: `answer is not JSON: ${preview(scrub(raw))}` }))
  }
  return decodeBrainAnswerJson(parsed.success, scrub)
}

/** `decodeBrainAnswer` of an answer already parsed: a streamed one, assembled from its events. */
export const decodeBrainAnswerJson = (json: unknown, scrub: Scrub = keepAll): Effect.Effect<MessagesResponse, BrainError> => {
  if (answersError(json)) {
    const error = json.error
    const reason = error === "timeout" ? "timeout" : "fatal"
    const misconfigured = reason === "fatal" ? Result.getOrUndefined(decodeMisconfigured(json.misconfigured)) : undefined
    return Effect.fail(
      new BrainError({
        reason,
        detail: `brain answered error: ${preview(scrub(JSON.stringify(error)))}` +
          (misconfigured !== undefined ? ` (misconfigured: ${misconfigured.problem}; fix ${misconfigured.setting})` : ""),
        ...(misconfigured !== undefined ? { misconfigured } : {})
      })
    )
  }
  return Result.match(decodeSparingUsage(decodeResponse, json, scrub), {
    onFailure: (error) =>
      Effect.fail(new BrainError({ reason: "fatal", detail: `answer is not a Messages API response: ${oneLine(error, scrub)}` })),
    onSuccess: (decoded) => Effect.as(decoded.warning, decoded.answer)
  })
}

/**
 * Decodes an answer's JSON with `decode`; when its `usage` alone is
 * malformed, the answer without it, and a warning saying so: token counts
 * are for the ledger, and the reply stands.
 */
export const decodeSparingUsage = <A>(
  decode: (json: unknown) => Result.Result<A, Schema.SchemaError>,
  json: unknown,
  scrub: Scrub = keepAll
): Result.Result<{ readonly answer: A; readonly warning: Effect.Effect<void> }, Schema.SchemaError> => {
  const decoded = decode(json)
  if (Result.isSuccess(decoded)) return Result.succeed({ answer: decoded.success, warning: Effect.void })
  if (!isJsonObject(json) || !("usage" in json)) return Result.fail(decoded.failure)
  const { usage: _usage, ...rest } = json
  return Result.match(decode(rest), {
    onFailure: () => Result.fail(decoded.failure),
    onSuccess: (answer) =>
      Result.succeed({
        answer,
        warning: Effect.logWarning(`the answer's usage is malformed, not counted: ${oneLine(decoded.failure, scrub)}`)
      })
  })
}

const issueList = madeOnFirstCall(() => {
  const format = SchemaIssue.makeFormatterStandardSchemaV1()
  return (issue: SchemaIssue.Issue) => format(issue).issues
})

/**
 * A parse error on one line, each problem with where it is: `content.0.type: Expected "text"…; …`.
 * The messages quote the answer's values: scrubbed before the cut.
 */
export const oneLine = (error: Schema.SchemaError, scrub: Scrub = keepAll): string =>
  preview(
    scrub(
      issueList(error.issue)
        .map((issue) => `${issue.path === undefined || issue.path.length === 0 ? "(root)" : issue.path.map(String).join(".")}: ${issue.message}`)
        .join("; ")
    ),
    300
  )

/** Every text block of a response, joined: what the model said. */
export const responseText = (response: MessagesResponse): string =>
  response.content.flatMap((block) => block.type === "text" && "text" in block ? [block.text] : []).join("")

/** Short, single-line excerpt of untrusted text for error messages; scrub a secret out before, never after. */
export const preview = (text: string, max = 200): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > max ? `${flat.slice(0, max)}…` : flat
}
