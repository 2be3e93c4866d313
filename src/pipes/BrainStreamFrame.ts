/**
 * Streaming on brain_out (opt-in, docs/pipes.md "Streaming events"): a
 * request the agent sends with `"stream":true` may be answered by event
 * frames, `{"stream_event":{…}}` and an empty line each (the Messages API's
 * own stream events), before its answer frame, which comes whole as ever.
 * An executable brain bridge says it can do so with one hello frame,
 * `{"planckclaw_events":1}`, before its first answer. No Messages API answer
 * has either key at its root, so neither is ever taken for an answer. Pure
 * codec.
 */
import * as Result from "effect/Result"
import { isJsonObject } from "../runtime/Json.js"

/** The hello of a brain bridge that streams when asked, with its empty line. */
export const STREAMS_HELLO = "{\"planckclaw_events\":1}\n\n"

/** A frame that is no answer: a stream event or a hello (leading spaces allowed, as JSON allows them). */
const INTERIM = /^\s*\{\s*"(stream_event|planckclaw_events)"\s*:/

/** What an interim frame is, cheaply (by its first key); undefined for any other frame, answers included. */
export const interimKind = (frame: string): "event" | "hello" | undefined => {
  const found = INTERIM.exec(frame)
  return found === null ? undefined : found[1] === "stream_event" ? "event" : "hello"
}

/**
 * The frame of a text delta, as the Messages API streams one
 * (`content_block_delta` of type `text_delta`). The built-in bridges send
 * only these, without the block's `index`: the agent reads nothing else.
 */
export const textEventFrame = (text: string): string =>
  `{"stream_event":{"type":"content_block_delta","delta":{"type":"text_delta","text":${JSON.stringify(text)}}}}\n\n`

/**
 * The text an event frame adds to the answer: that of a
 * `content_block_delta` whose delta is a `text_delta`; undefined for every
 * other event (message_start, ping, a tool call's JSON pieces, …) and for a
 * frame that cannot be read, which are skipped.
 */
export const eventText = (frame: string): string | undefined => {
  const json = Result.getOrUndefined(Result.try(() => JSON.parse(frame) as unknown))
  if (!isJsonObject(json) || !isJsonObject(json.stream_event)) return undefined
  const event = json.stream_event
  if (event.type !== "content_block_delta" || !isJsonObject(event.delta)) return undefined
  return event.delta.type === "text_delta" && typeof event.delta.text === "string" ? event.delta.text : undefined
}

/**
 * A request as a bridge received it, told apart from its `stream` field:
 * whether the agent asked for events, and the request without it (the API's
 * own `stream` must not reach a brain asked for a whole answer).
 */
export const takeStreamFlag = <R extends object>(request: R): { readonly streamed: boolean; readonly request: R } => {
  if (!Object.prototype.hasOwnProperty.call(request, "stream")) return { streamed: false, request }
  const { stream, ...rest } = request as R & { readonly stream?: unknown }
  return { streamed: stream === true, request: rest as R }
}
