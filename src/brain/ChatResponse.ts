/**
 * The answer half of the OpenAI Chat Completions wire: a response (whole, or
 * assembled from a stream by ChatStream) decoded and read back as a Messages
 * response, its usage as the Messages API counts it. Pure: OpenAiBrain posts
 * and retries, and ChatRequest writes the request.
 *
 * A call whose `arguments` do not parse to a JSON object keeps the model's
 * raw text as a string input: the agent refuses it, and ChatRequest sends it
 * back with words that say what was wrong.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { MessagesResponse, ResponseBlock, ToolUseBlock } from "../ports/Brain.js"
import { madeOnFirstCall } from "../runtime/FirstCall.js"
import { isJsonObject } from "../runtime/Json.js"

const Optional = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

/**
 * The parts of a response we act on. Struct decoding ignores the rest
 * (system_fingerprint, logprobs, reasoning_content, timings, …), and every
 * field a local server may leave out is optional. Made with its decoder, on
 * the first response: a run with another brain never needs it.
 */
const chatResponseSchema = () => {
  // What we read of a tool call. `arguments` is a JSON string on the wire, but
  // some servers send an object; `id` is missing on some local servers.
  const ChatToolCallIn = Schema.Struct({
    id: Optional(Schema.String),
    function: Schema.Struct({ name: Schema.String, arguments: Schema.optional(Schema.Unknown) })
  })
  const ContentPart = Schema.Struct({ type: Schema.String, text: Schema.optional(Schema.String) })
  return Schema.Struct({
    id: Optional(Schema.String),
    model: Optional(Schema.String),
    choices: Schema.Array(Schema.Struct({
      message: Schema.Struct({
        content: Optional(Schema.Union([Schema.String, Schema.Array(ContentPart)])),
        refusal: Optional(Schema.String),
        tool_calls: Optional(Schema.Array(ChatToolCallIn))
      }),
      finish_reason: Optional(Schema.String)
    })),
    usage: Optional(Schema.Struct({
      prompt_tokens: Optional(Schema.Number),
      completion_tokens: Optional(Schema.Number),
      prompt_tokens_details: Optional(Schema.Struct({ cached_tokens: Optional(Schema.Number) }))
    }))
  })
}
export type ChatResponse = ReturnType<typeof chatResponseSchema>["Type"]

export const decodeChatResponse = madeOnFirstCall(() => Schema.decodeUnknownResult(chatResponseSchema()))

/**
 * `length` is a cut answer and `content_filter` one the safety filter stopped
 * (`refusal`, as the Messages API names it), even with calls in it (their
 * arguments may be cut too); otherwise any call means a tool round, whatever
 * the reason says (some servers answer calls with `stop`).
 */
export const stopReasonOf = (finishReason: string | null | undefined, hasCalls: boolean): string =>
  finishReason === "length" ? "max_tokens" : finishReason === "content_filter" ? "refusal" : hasCalls ? "tool_use" : "end_turn"

const parseJson = (text: string): Result.Result<unknown, unknown> => Result.try(() => JSON.parse(text) as unknown)

const inputOf = (raw: unknown): unknown => {
  if (raw === undefined || raw === null) return {}
  if (typeof raw !== "string") return raw
  if (raw.trim() === "") return {} // a call without parameters, as some servers send it
  const parsed = parseJson(raw)
  return Result.isSuccess(parsed) && isJsonObject(parsed.success) ? parsed.success : raw
}

/**
 * The first choice as a Messages response. `fallbackId(i)` names the i-th
 * call when the server gave it no id; it must be unique within a turn.
 */
export const fromChatResponse = (
  response: ChatResponse,
  fallbackId: (index: number) => string
): Result.Result<MessagesResponse, string> => {
  const choice = response.choices[0]
  if (choice === undefined) return Result.fail("answer has no choices")
  const { content, refusal, tool_calls } = choice.message
  const text = typeof content === "string"
    ? content
    : (content ?? []).flatMap((part) => part.type === "text" && part.text !== undefined ? [part.text] : []).join("")
  const said = text !== "" ? text : refusal ?? ""
  const usage = usageOf(response)
  const calls = (tool_calls ?? []).map((call, index): ToolUseBlock => ({
    type: "tool_use",
    id: call.id ?? fallbackId(index),
    name: call.function.name,
    input: inputOf(call.function.arguments)
  }))
  const blocks: Array<ResponseBlock> = [...(said !== "" ? [{ type: "text" as const, text: said }] : []), ...calls]
  return Result.succeed({
    ...(response.id != null ? { id: response.id } : {}),
    type: "message",
    role: "assistant",
    ...(response.model != null ? { model: response.model } : {}),
    content: blocks,
    stop_reason: stopReasonOf(choice.finish_reason, calls.length > 0),
    ...(usage !== undefined ? { usage } : {})
  })
}

/** Token counts in the Messages API's `usage` shape (MessagesResponse.usage), for the usage ledger. */
export interface MessagesUsage {
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cache_read_input_tokens?: number
}

/** OpenAI counts cached tokens inside prompt_tokens; the Messages API counts them apart. */
export const usageOf = (response: ChatResponse): MessagesUsage | undefined => {
  const usage = response.usage
  if (usage == null) return undefined
  const cached = usage.prompt_tokens_details?.cached_tokens ?? undefined
  const prompt = usage.prompt_tokens ?? 0
  return {
    input_tokens: cached === undefined ? prompt : Math.max(0, prompt - cached),
    output_tokens: usage.completion_tokens ?? 0,
    ...(cached !== undefined ? { cache_read_input_tokens: cached } : {})
  }
}
