/**
 * The Anthropic Messages API stand-in on 127.0.0.1, for the unit, bin,
 * bridge and fault suites: every request recorded (method, path, headers,
 * raw and parsed body), each answered by the reply a handler picks for the
 * n-th request (LoopbackHttp: a status, a hang, a drop, a body cut short,
 * any of them delayed), plus the Messages shapes: text and tool-use answers,
 * API errors, and an echo brain that also compacts.
 *
 *   const server = yield* AnthropicServer.make(AnthropicServer.replies(
 *     AnthropicServer.apiError(529, "overloaded_error", "Overloaded"),
 *     AnthropicServer.delay(200, AnthropicServer.text("Hello!"))
 *   ))
 *   // point ANTHROPIC_BASE_URL at server.url, then:
 *   const [first] = yield* server.awaitRequests(1)
 */
import { Effect, Result, type Scope } from "effect"
import * as LoopbackHttp from "./LoopbackHttp.js"

export {
  cutShort,
  delay,
  drop,
  events,
  gated,
  hang,
  replies,
  type Reply,
  respond,
  ServerError,
  unusedPort,
  unusedUrl
} from "./LoopbackHttp.js"

/** A Messages API request body, as far as the suites look into it. */
export interface MessagesBody {
  /** A string, or text blocks when a turn carries prompt-caching breakpoints. */
  readonly system?: string | ReadonlyArray<{ readonly type: string; readonly text: string }>
  readonly tools?: ReadonlyArray<{ readonly name: string; readonly description: string }>
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content: unknown }>
}

/** `body` is the request parsed as JSON; a body that is not JSON reads as `{ messages: [] }`. */
export type RecordedRequest = LoopbackHttp.RecordedRequest<MessagesBody>
export type Handler = LoopbackHttp.Handler<MessagesBody>

export interface AnthropicServer extends LoopbackHttp.LoopbackServer<MessagesBody> {
  /** `http://127.0.0.1:{port}`, without a trailing slash: a value for ANTHROPIC_BASE_URL. */
  readonly url: string
  /** Turn requests only (compaction requests left out). */
  readonly turns: Effect.Effect<ReadonlyArray<RecordedRequest>>
}

const parseBody = (raw: string): MessagesBody =>
  Result.getOrElse(Result.try(() => JSON.parse(raw) as MessagesBody), () => ({ messages: [] }))

/** Serves `handler` for the life of the scope; `port` 0 (the default) picks a free one. */
export const make = (
  handler: Handler,
  port = 0
): Effect.Effect<AnthropicServer, LoopbackHttp.ServerError, Scope.Scope> =>
  Effect.map(LoopbackHttp.serve(handler, parseBody, port), (server) => ({
    ...server,
    url: `http://127.0.0.1:${server.port}`,
    turns: Effect.map(server.requests, (all) => all.filter((request) => !isCompaction(request)))
  }))

// ---------------------------------------------------------------------------
// Answers

/**
 * `echo TEXT` as a 200 Messages API answer whose token counts grow with the
 * text (so agents' usage sums differ): the records and cluster suites' turn.
 */
export const countingEcho = (said: string): LoopbackHttp.Reply =>
  LoopbackHttp.respond(200, {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model: "claude-haiku-4-5-20251001",
    content: [{ type: "text", text: `echo ${said}` }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 100 + said.length, output_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 7 }
  })

/** A 200 Messages API answer with these content blocks. */
export const message = (content: ReadonlyArray<unknown>, stopReason: string | null = "end_turn"): LoopbackHttp.Reply =>
  LoopbackHttp.respond(200, {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model: "claude-test",
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 }
  })

/** A 200 answer whose content is one text block. */
export const text = (reply: string): LoopbackHttp.Reply => message([{ type: "text", text: reply }])

/**
 * A `tool_use` answer: a short text block (`preamble`, none when null), then
 * one block per call. The reply begins with the preamble.
 */
export const toolUse = (
  calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly input: unknown }>,
  preamble: string | null = "Let me check."
) =>
  message([
    ...(preamble === null ? [] : [{ type: "text", text: preamble }]),
    ...calls.map((call) => ({ type: "tool_use", ...call }))
  ], "tool_use")

/** An error answer shaped like the real API's: `{"type":"error","error":{"type","message"}}`. */
export const apiError = (
  status: number,
  type: string,
  detail: string,
  headers: Readonly<Record<string, string>> = {}
): LoopbackHttp.Reply => LoopbackHttp.respond(status, { type: "error", error: { type, message: detail } }, headers)

// ---------------------------------------------------------------------------
// Streamed answers (server-sent events, as the API sends them with "stream": true)

/** One server-sent event: its type as `event:`, its data as JSON. */
export const sse = (data: { readonly type: string } & Record<string, unknown>): string =>
  `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`

/** A block of a streamed answer: text in the pieces it is sent in, or a tool call whose input goes in two JSON pieces. */
export type StreamedBlock =
  | { readonly type: "text"; readonly pieces: ReadonlyArray<string> }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown }

export interface StreamedUsage {
  readonly input_tokens?: number
  readonly output_tokens?: number
  readonly cache_creation_input_tokens?: number
  readonly cache_read_input_tokens?: number
}

/** The events of one block at `index`: its start, its deltas, its stop. */
export const blockEvents = (block: StreamedBlock, index: number): Array<string> => {
  if (block.type === "text") {
    return [
      sse({ type: "content_block_start", index, content_block: { type: "text", text: "" } }),
      ...block.pieces.map((text) => sse({ type: "content_block_delta", index, delta: { type: "text_delta", text } })),
      sse({ type: "content_block_stop", index })
    ]
  }
  const json = JSON.stringify(block.input)
  const half = Math.floor(json.length / 2)
  return [
    sse({ type: "content_block_start", index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } }),
    ...[json.slice(0, half), json.slice(half)].map((partial_json) =>
      sse({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } })
    ),
    sse({ type: "content_block_stop", index })
  ]
}

/** The opening event: the message, no content yet, its input usage (and a first output count, as the API sends). */
export const messageStart = (usage: StreamedUsage = { input_tokens: 12, output_tokens: 1 }): string =>
  sse({
    type: "message_start",
    message: {
      id: "msg_stream",
      type: "message",
      role: "assistant",
      model: "claude-test",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage
    }
  })

/** The closing events: the stop reason and the final output count, then message_stop. */
export const messageEnd = (stopReason: string, usage: StreamedUsage = { output_tokens: 7 }): Array<string> => [
  sse({ type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage }),
  sse({ type: "message_stop" })
]

/** Every event of a whole streamed answer, ping included, in the API's order. */
export const streamEvents = (
  blocks: ReadonlyArray<StreamedBlock>,
  options: { readonly stopReason?: string; readonly start?: StreamedUsage; readonly end?: StreamedUsage } = {}
): Array<string> => [
  messageStart(options.start),
  sse({ type: "ping" }),
  ...blocks.flatMap(blockEvents),
  ...messageEnd(options.stopReason ?? (blocks.some((block) => block.type === "tool_use") ? "tool_use" : "end_turn"), options.end)
]

/** A streamed answer whose one text block comes in `pieces`. */
export const streamedText = (...pieces: ReadonlyArray<string>): LoopbackHttp.Reply =>
  LoopbackHttp.events(streamEvents([{ type: "text", pieces }]))

/** Streams when the request asks for it (`"stream": true`), answers `whole` otherwise. */
export const streamingWhenAsked = (streamed: LoopbackHttp.Reply, whole: LoopbackHttp.Reply): Handler => (request) =>
  (request.body as { readonly stream?: unknown }).stream === true ? streamed : whole

// ---------------------------------------------------------------------------
// Reading requests, and an echo brain

const COMPACTION_PREFIX = "You are a memory compaction assistant"
export const isCompaction = (request: RecordedRequest) =>
  typeof request.body.system === "string" && request.body.system.startsWith(COMPACTION_PREFIX)

/** Text of the last user message that is plain text (not tool results). */
export const lastUserText = (body: MessagesBody): string => {
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const entry = body.messages[i]!
    if (entry.role === "user" && typeof entry.content === "string") return entry.content
  }
  return ""
}

/** Summary items are `- user: TEXT` lines. */
export const summaryItems = (summary: string): Array<string> =>
  summary.split("\n").filter((item) => item.startsWith("- user: ")).map((item) => item.slice("- user: ".length))

/**
 * A summary that lists every user message it was given, after the items of
 * the existing summary, duplicates kept: folding an exchange twice shows.
 */
export const listingSummary = (request: RecordedRequest): LoopbackHttp.Reply => {
  const content = String(request.body.messages[0]?.content ?? "")
  const [existing = "", batch = ""] = content.split("\n\nCONVERSATION TO SUMMARIZE:\n")
  const folded = batch.split("\n").flatMap((raw) => {
    const entry = Result.getOrUndefined(Result.try(() => JSON.parse(raw) as { role?: unknown; content?: unknown }))
    return entry?.role === "user" && typeof entry.content === "string" ? [entry.content] : []
  })
  const items = [...summaryItems(existing), ...folded]
  return text(`Conversation so far:\n${items.map((item) => `- user: ${item}`).join("\n")}`)
}

/** Answers turns with `re: TEXT` and compactions with `listingSummary`. */
export const echo: Handler = (request) =>
  isCompaction(request) ? listingSummary(request) : text(`re: ${lastUserText(request.body)}`)
