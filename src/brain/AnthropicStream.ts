/**
 * The Messages API's server-sent events, assembled into the answer
 * `complete` would have returned. `message_start` brings the message and its
 * input usage (cache reads and writes included), each content block is built
 * from its start and its deltas (a tool call's input from its JSON pieces),
 * `message_delta` brings the stop reason and the final counts (they are
 * totals, not increments: the last one stands), `message_stop` ends it.
 * Text is passed on as it comes; `ping` and event types this version does
 * not know are skipped, and do not count as the answer going on (the
 * brain's timeout is not restarted by them). An `error` event fails the
 * answer, and so does a stream that ends before `message_stop`: half an
 * answer is never one.
 */
import * as Effect from "effect/Effect"
import type * as Sse from "effect/encoding/Sse"
import * as Result from "effect/Result"
import {
  answerEvent,
  type BrainEvent,
  BrainError,
  type MessagesResponse,
  preview,
  type Scrub,
  textDelta
} from "../ports/Brain.js"
import { isJsonObject } from "../runtime/Json.js"
import { type Assembly, dataOf } from "./SseResponse.js"

type JsonObject = Record<string, unknown>

/** Error types the API documents as passing: the same request may succeed later. */
const TRANSIENT_ERRORS: ReadonlySet<unknown> = new Set(["overloaded_error", "api_error", "rate_limit_error", "timeout_error"])

/** A tool call's input from its JSON pieces: an object, or the model's raw text when it is not one (the turn refuses it). */
const inputOf = (pieces: string | undefined, started: unknown): unknown => {
  if (pieces === undefined || pieces.trim() === "") return started ?? {}
  const parsed = Result.try(() => JSON.parse(pieces) as unknown)
  return Result.isSuccess(parsed) ? parsed.success : pieces
}

/**
 * One answer's events as brain events: each text delta, then the assembled
 * answer, checked by `decode` (the Messages response Schema, as a whole
 * answer is).
 */
export const assembly = (
  decode: (whole: unknown) => Effect.Effect<MessagesResponse, BrainError>,
  scrub: Scrub
): Assembly => {
  let message: JsonObject = {}
  let usage: JsonObject | undefined
  let stopReason: unknown = null
  let stopped = false
  const blocks: Array<JsonObject | undefined> = []
  const inputs: Array<string | undefined> = []

  const take = (event: Sse.Event, out: Array<BrainEvent>): BrainError | boolean => {
    const data = dataOf(event)
    if (!isJsonObject(data)) {
      return new BrainError({ reason: "fatal", detail: `an event of the answer is not JSON: ${preview(scrub(event.data))}` })
    }
    const index = typeof data.index === "number" ? data.index : -1
    switch (data.type) {
      case "message_start": {
        if (!isJsonObject(data.message)) return false
        const { content: _content, usage: started, ...rest } = data.message
        message = rest
        usage = isJsonObject(started) ? { ...started } : undefined
        if ("stop_reason" in rest) stopReason = rest.stop_reason
        return true
      }
      case "content_block_start": {
        if (index < 0 || !isJsonObject(data.content_block)) return false
        const block = { ...data.content_block }
        blocks[index] = block
        if (block.type === "tool_use") inputs[index] = ""
        if (block.type === "text" && typeof block.text === "string" && block.text !== "") out.push(textDelta(block.text))
        return true
      }
      case "content_block_delta": {
        const block = blocks[index]
        const delta = data.delta
        if (block === undefined || !isJsonObject(delta)) return false
        if (delta.type === "text_delta" && typeof delta.text === "string") {
          block.text = `${typeof block.text === "string" ? block.text : ""}${delta.text}`
          out.push(textDelta(delta.text))
          return true
        }
        if (delta.type === "input_json_delta" && typeof delta.partial_json === "string") {
          inputs[index] = `${inputs[index] ?? ""}${delta.partial_json}`
        }
        // Any delta of a block is the model writing (its thinking too), even one not kept.
        return true
      }
      case "content_block_stop":
        return true
      case "message_delta": {
        if (isJsonObject(data.delta) && "stop_reason" in data.delta) stopReason = data.delta.stop_reason
        if (isJsonObject(data.usage)) {
          const counts = data.usage
          usage = { ...usage, ...Object.fromEntries(Object.entries(counts).filter(([, value]) => value !== null && value !== undefined)) }
        }
        return true
      }
      case "message_stop":
        stopped = true
        return true
      case "error": {
        const error = isJsonObject(data.error) ? data.error : {}
        const words = [error.type, error.message].filter((part): part is string => typeof part === "string").join(": ")
        return new BrainError({
          reason: TRANSIENT_ERRORS.has(error.type) ? "timeout" : "fatal",
          detail: `the API broke off its answer with an error: ${preview(scrub(words === "" ? event.data : words))}`
        })
      }
      default:
        return false
    }
  }

  const finish = (): Effect.Effect<BrainEvent, BrainError> => {
    if (!stopped) {
      return Effect.fail(new BrainError({ reason: "timeout", detail: "the answer stream ended before the answer was complete" }))
    }
    const content = blocks.flatMap((block, index) =>
      block === undefined ? [] : [block.type === "tool_use" ? { ...block, input: inputOf(inputs[index], block.input) } : block]
    )
    const whole = { ...message, content, stop_reason: stopReason, ...(usage === undefined ? {} : { usage }) }
    return Effect.map(decode(whole), answerEvent)
  }

  return { take, finish }
}
