/**
 * The Brain port: Anthropic Messages API JSON in, Messages API JSON out.
 * Implementations: the Anthropic HTTP API, an external process over FIFOs,
 * a scripted brain for tests.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { isJsonObject } from "./Json.js"

export const TextBlock = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String
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

export const ResponseBlock = Schema.Union(TextBlock, ToolUseBlock, OtherBlock)
export type ResponseBlock = typeof ResponseBlock.Type

export const MessageContent = Schema.Union(
  Schema.String,
  Schema.Array(Schema.Union(TextBlock, ToolUseBlock, ToolResultBlock))
)

export const Message = Schema.Struct({
  role: Schema.Literal("user", "assistant"),
  content: MessageContent
})
export type Message = typeof Message.Type

export const ToolSpec = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  input_schema: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
export type ToolSpec = typeof ToolSpec.Type

export const MessagesRequest = Schema.Struct({
  model: Schema.String,
  max_tokens: Schema.Number,
  system: Schema.optional(Schema.String),
  messages: Schema.Array(Message),
  tools: Schema.optional(Schema.Array(ToolSpec))
})
export type MessagesRequest = typeof MessagesRequest.Type

export const MessagesResponse = Schema.Struct({
  id: Schema.optional(Schema.String),
  type: Schema.optional(Schema.String),
  role: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  content: Schema.Array(ResponseBlock),
  stop_reason: Schema.optional(Schema.NullOr(Schema.String))
})
export type MessagesResponse = typeof MessagesResponse.Type

/**
 * A brain that gave up. `reason` is what travels on the brain FIFO as
 * `{"error":"timeout"}` or `{"error":"fatal"}`; `detail` stays in this process.
 */
export class BrainError extends Schema.TaggedError<BrainError>()("BrainError", {
  reason: Schema.Literal("timeout", "fatal"),
  detail: Schema.String
}) {}

export interface BrainService {
  readonly complete: (request: MessagesRequest) => Effect.Effect<MessagesResponse, BrainError>
}

export class Brain extends Context.Tag("planckclaw/Brain")<Brain, BrainService>() {}

const decodeResponse = Schema.decodeUnknownEither(MessagesResponse)

/**
 * Reads a brain answer as it arrives on the wire (HTTP body or FIFO frame):
 * any root-level `error` key is a failure, anything else must be a Messages
 * API response.
 */
export const decodeBrainAnswer = (raw: string): Effect.Effect<MessagesResponse, BrainError> => {
  const parsed = Either.try(() => JSON.parse(raw) as unknown)
  if (Either.isLeft(parsed)) {
    return Effect.fail(new BrainError({ reason: "fatal", detail: `answer is not JSON: ${preview(raw)}` }))
  }
  const json = parsed.right
  if (isJsonObject(json) && "error" in json) {
    const error = json.error
    const reason = error === "timeout" ? "timeout" : "fatal"
    return Effect.fail(new BrainError({ reason, detail: `brain answered error: ${preview(JSON.stringify(error))}` }))
  }
  const decoded = decodeResponse(json)
  return Either.isRight(decoded)
    ? Effect.succeed(decoded.right)
    : Effect.fail(
      new BrainError({
        reason: "fatal",
        detail: `answer is not a Messages API response: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`
      })
    )
}

/** Every text block of a response, joined: what the model said. */
export const responseText = (response: MessagesResponse): string =>
  response.content.flatMap((block) => block.type === "text" && "text" in block ? [block.text] : []).join("")

/** Short, single-line excerpt of untrusted text for error messages. */
export const preview = (text: string, max = 200): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > max ? `${flat.slice(0, max)}…` : flat
}
