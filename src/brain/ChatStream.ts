/**
 * A Chat Completions stream (`stream: true`, usage asked for with
 * `stream_options.include_usage`), assembled into the response the server
 * would have sent whole, then read as one (ChatResponse). Each chunk's
 * delta adds to the first choice: its text (passed on as it comes; a
 * string, or the text parts of a list), its refusal, its tool calls by
 * their `index` (the id and name in the first piece, the arguments in
 * pieces; an index that brings another id starts another call), or,
 * without one, by their id and name.
 * The usage comes in a last chunk with no choices. `data: [DONE]` ends it;
 * a stream that ends without it and without a finish reason was cut, and
 * fails: half an answer is never one. Keep-alives (comment lines, which the
 * SSE parser drops, and chunks that carry nothing: no choices, an empty
 * delta, empty text) do not count as the answer going on: the brain's
 * timeout is not restarted by them.
 */
import * as Effect from "effect/Effect"
import type * as Sse from "effect/encoding/Sse"
import * as Result from "effect/Result"
import { answersError, type BrainEvent, BrainError, preview, type Scrub, textDelta } from "../ports/Brain.js"
import { isJsonObject } from "../runtime/Json.js"
import { type Assembly, dataOf } from "./SseResponse.js"

/** The request of `chat`, asking for a stream whose last chunk counts the tokens (`withUsage`, unless the server refuses it). */
export const streamingRequest = <R extends object>(chat: R, withUsage = true) =>
  withUsage ? { ...chat, stream: true, stream_options: { include_usage: true } } : { ...chat, stream: true }

/**
 * Whether an answer refuses `stream_options`: a 400 or 422 that names it
 * (Azure AI Foundry's "Extra parameters ['stream_options'] are not
 * allowed", Azure's "Unrecognized request argument supplied"). Without it,
 * the answer comes all the same, its usage uncounted.
 */
export const refusesStreamOptions = (status: number, body: string): boolean =>
  (status === 400 || status === 422) && body.includes("stream_options")

interface CallPieces {
  id?: string
  name?: string
  arguments: unknown
}

/**
 * Whether a delta carries any of the answer: a non-empty string (text, a
 * refusal, reasoning, as some servers name it), a call, anything but its
 * role. A loop over its keys, not a list of them: this runs for every chunk.
 */
const carries = (delta: Record<string, unknown>): boolean => {
  for (const key in delta) {
    if (key === "role") continue
    const value = delta[key]
    if (typeof value === "string" ? value !== "" : Array.isArray(value) ? value.length > 0 : isJsonObject(value)) return true
  }
  return false
}

/**
 * A delta's text: a string, or the `text` parts of a list of content parts
 * (Mistral sends its answer so, beside `thinking` parts that are not the
 * answer), as a whole answer's content is read (ChatResponse).
 */
const textOf = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  let text = ""
  for (const part of content) {
    if (isJsonObject(part) && part.type === "text" && typeof part.text === "string") text += part.text
  }
  return text
}

/** Whether a call's arguments so far are whole: an object a server sent, or text that parses as JSON. */
const isWhole = (args: unknown): boolean =>
  typeof args !== "string" || (args.trim() !== "" && Result.isSuccess(Result.try(() => JSON.parse(args) as unknown)))

/** The words of an error object a server put in its stream. */
const errorWords = (error: unknown): string =>
  typeof error === "string"
    ? error
    : isJsonObject(error) && typeof error.message === "string"
    ? error.message
    : JSON.stringify(error)

/**
 * One answer's chunks as brain events: each piece of text, then the
 * assembled response read by `decode` (the whole-answer reader: its Schema,
 * ids for calls that have none, usage as the Messages API counts it).
 */
export const assembly = (
  decode: (whole: unknown) => Effect.Effect<BrainEvent, BrainError>,
  scrub: Scrub
): Assembly => {
  let id: unknown
  let model: unknown
  let content = ""
  let refusal = ""
  let finishReason: unknown
  let usage: unknown
  let done = false
  // The first chunk with a role starts the answer, as message_start does on the Messages API.
  let started = false
  const calls: Array<CallPieces> = []

  /**
   * Where a piece without `index` goes (Gemini, older Ollama, mistral.rs and
   * SGLang send each call whole, in a chunk of its own): a new id, or a name
   * when the last call has one, starts a call; a piece with neither continues
   * the last.
   */
  const unindexedSlot = (piece: Record<string, unknown>): number => {
    const last = calls.length - 1
    const current = calls[last]
    if (current === undefined) return calls.length
    const id = piece.id
    if (typeof id === "string" && id !== "" && current.id !== undefined) return id === current.id ? last : calls.length
    const fn = piece.function
    const named = isJsonObject(fn) && typeof fn.name === "string" && fn.name !== ""
    return named && current.name !== undefined ? calls.length : last
  }

  // Where a wire index writes: its own slot, until a piece at it brings another call's id once the call
  // there is whole (Ollama, some gateways give every call index 0); then the new call's, so the pieces
  // after it without an id go there. A new id before the arguments are whole (a gateway that names each
  // piece afresh) continues the call.
  const slots = new Map<number, number>()

  const indexedSlot = (index: number, id: unknown): number => {
    const slot = slots.get(index) ?? index
    const held = calls[slot]
    if (held?.id === undefined || typeof id !== "string" || id === "" || id === held.id || !isWhole(held.arguments)) return slot
    slots.set(index, calls.length)
    return calls.length
  }

  const addCall = (piece: unknown): void => {
    if (!isJsonObject(piece)) return
    const index = typeof piece.index === "number" ? indexedSlot(piece.index, piece.id) : unindexedSlot(piece)
    const call = calls[index] ??= { arguments: "" }
    if (typeof piece.id === "string" && piece.id !== "") call.id = piece.id
    const fn = piece.function
    if (!isJsonObject(fn)) return
    if (typeof fn.name === "string" && fn.name !== "" && call.name === undefined) call.name = fn.name
    if (typeof fn.arguments === "string") {
      call.arguments = typeof call.arguments === "string" ? `${call.arguments}${fn.arguments}` : fn.arguments
    } else if (fn.arguments !== undefined && fn.arguments !== null) {
      call.arguments = fn.arguments // a server that sends the arguments as an object
    }
  }

  const take = (event: Sse.Event, out: Array<BrainEvent>): BrainError | boolean => {
    if (event.data.trim() === "[DONE]") {
      done = true
      return true
    }
    const chunk = dataOf(event)
    if (!isJsonObject(chunk)) {
      return new BrainError({ reason: "fatal", detail: `a chunk of the answer is not JSON: ${preview(scrub(event.data))}` })
    }
    if (answersError(chunk)) {
      return new BrainError({
        reason: "timeout",
        detail: `the server broke off its answer with an error: ${preview(scrub(errorWords(chunk.error)))}`
      })
    }
    id ??= chunk.id
    model ??= chunk.model
    let carried = false
    if (isJsonObject(chunk.usage)) {
      usage = chunk.usage
      carried = true
    }
    const choice = Array.isArray(chunk.choices)
      ? chunk.choices.find((each) => isJsonObject(each) && (each.index === undefined || each.index === 0))
      : undefined
    if (!isJsonObject(choice)) return carried
    if (typeof choice.finish_reason === "string") {
      finishReason = choice.finish_reason
      carried = true
    }
    const delta = choice.delta
    if (!isJsonObject(delta)) return carried
    if (!started && typeof delta.role === "string") started = carried = true
    if (typeof delta.refusal === "string") refusal += delta.refusal
    if (Array.isArray(delta.tool_calls)) delta.tool_calls.forEach(addCall)
    const text = textOf(delta.content)
    if (text === "") return carried || carries(delta)
    content += text
    out.push(textDelta(text))
    return true
  }

  const finish = (): Effect.Effect<BrainEvent, BrainError> => {
    if (!done && finishReason === undefined) {
      return Effect.fail(new BrainError({ reason: "timeout", detail: "the answer stream ended before the answer was complete" }))
    }
    const toolCalls = calls.flatMap((call) =>
      call === undefined
        ? []
        // A piece never sent is left out, not undefined: the Schema tells a missing key from an undefined one.
        : [{
          ...(call.id !== undefined ? { id: call.id } : {}),
          type: "function",
          function: { ...(call.name !== undefined ? { name: call.name } : {}), arguments: call.arguments }
        }]
    )
    const whole = {
      ...(typeof id === "string" ? { id } : {}),
      ...(typeof model === "string" ? { model } : {}),
      choices: [{
        message: {
          role: "assistant",
          content: content === "" ? null : content,
          ...(refusal !== "" ? { refusal } : {}),
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
        },
        finish_reason: typeof finishReason === "string" ? finishReason : null
      }],
      ...(usage !== undefined ? { usage } : {})
    }
    return decode(whole)
  }

  return { take, finish }
}
