/**
 * One streamed HTTP exchange of a brain: POST a JSON body that asks for
 * server-sent events, and read the answer as it comes. A 2xx answer in
 * `text/event-stream` is handed on as its events (Effect's SSE parser) once
 * its headers are in; any other answer (an error status, or a server that
 * ignores `stream` and answers JSON, as some local ones do) is read whole,
 * as PostJson reads it, and judged as today.
 *
 * The retries (BrainRetry) cover the exchange up to those headers; once the
 * events flow, nothing is asked again, so no text reaches a listener twice.
 * A stream that stops short (the server closes, nothing arrives within the
 * timeout) fails as a transient BrainError ("timeout"): the turn answers
 * with the apology and stores nothing of the half answer.
 */
import type * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Sse from "effect/encoding/Sse"
import * as Stream from "effect/Stream"
import { BrainError, preview } from "../ports/Brain.js"
import { rootCause } from "../runtime/Errors.js"
import { ANSWER_MAX_BYTES, type HttpAnswer, readCapped, sendJson } from "./PostJson.js"

/** An answer whose body is events (`events`), or read whole (`body`, as PostJson's). */
export interface StreamingAnswer extends HttpAnswer {
  readonly events: Stream.Stream<Sse.Event, BrainError> | undefined
}

/** Whether `answer` (as BrainRetry hands it back) is a stream of events. */
export const eventsOf = (answer: HttpAnswer): Stream.Stream<Sse.Event, BrainError> | undefined =>
  "events" in answer ? (answer as StreamingAnswer).events : undefined

/** How a stream that stops short is told. */
export interface StreamWords {
  /** The detail when nothing arrives for `timeout`. */
  readonly silent: string
  readonly scrub: (text: string) => string
}

const isEventStream = (response: HttpClientResponse.HttpClientResponse): boolean =>
  response.status >= 200 && response.status < 300 &&
  (response.headers["content-type"] ?? "").toLowerCase().startsWith("text/event-stream")

const absolute = (location: string | undefined, base: string): string | undefined =>
  location === undefined ? undefined : URL.canParse(location, base) ? new URL(location, base).href : location

/**
 * The events of a body: decoded as UTF-8, parsed by Effect's SSE parser
 * (`retry:` directives are for browsers reconnecting, and ignored), each
 * read bounded by `timeout`, the whole by ANSWER_MAX_BYTES.
 */
const eventsFrom = (
  bytes: Stream.Stream<Uint8Array, HttpClientError.HttpClientError>,
  timeout: Duration.Duration,
  words: StreamWords
): Stream.Stream<Sse.Event, BrainError> =>
  Stream.suspend(() => {
    let size = 0
    const parsed: Array<Sse.Event> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") parsed.push(event)
    }, { maxEventSize: ANSWER_MAX_BYTES })
    const tooLarge = new BrainError({
      reason: "fatal",
      detail: `the API's answer was larger than ${ANSWER_MAX_BYTES / (1024 * 1024)} MiB`
    })
    return bytes.pipe(
      Stream.mapError((error) =>
        new BrainError({
          reason: "timeout",
          detail: `the answer broke off: ${preview(words.scrub(rootCause(error.cause ?? error)))}`
        })
      ),
      Stream.timeoutOrElse({
        duration: timeout,
        orElse: () => Stream.fail(new BrainError({ reason: "timeout", detail: words.silent }))
      }),
      Stream.tap((chunk) => {
        size += chunk.length
        return size > ANSWER_MAX_BYTES ? Effect.fail(tooLarge) : Effect.void
      }),
      Stream.decodeText,
      Stream.mapEffect((text) => {
        const failure = parser.feed(text)
        if (failure !== undefined) return Effect.fail(new BrainError({ reason: "fatal", detail: failure.message }))
        return Effect.succeed(parsed.splice(0))
      }),
      Stream.flattenIterable
    )
  })

/**
 * POSTs a JSON `body`; an event stream is answered at its headers, with its
 * events bounded by `timeout` between reads, anything else read whole. A
 * redirect is an answer, never followed (PostJson).
 */
export const postForEvents = (
  client: HttpClient.HttpClient,
  url: string,
  headers: Record<string, string>,
  body: string,
  timeout: Duration.Duration,
  words: StreamWords
): Effect.Effect<StreamingAnswer, HttpClientError.HttpClientError | BrainError> =>
  sendJson(client, url, headers, body).pipe(
    Effect.flatMap((response): Effect.Effect<StreamingAnswer, HttpClientError.HttpClientError | BrainError> => {
      const head = {
        status: response.status,
        retryAfter: response.headers["retry-after"],
        location: absolute(response.headers["location"], url)
      }
      return isEventStream(response)
        ? Effect.succeed({ ...head, body: "", events: eventsFrom(response.stream, timeout, words) })
        : Effect.map(readCapped(response), (text) => ({ ...head, body: text, events: undefined }))
    })
  )

/** An event's `data` as JSON; undefined when it is not. */
export const dataOf = (event: Sse.Event): unknown => Result.getOrUndefined(Result.try(() => JSON.parse(event.data) as unknown))
