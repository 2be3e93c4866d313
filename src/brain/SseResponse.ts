/**
 * One streamed HTTP exchange of a brain: POST a JSON body that asks for
 * server-sent events, and read the answer as it comes. A 2xx answer in
 * `text/event-stream` is handed on once its headers are in, as the brain
 * events its server-sent events make (Effect's SSE parser, then the API's
 * Assembly: AnthropicStream, ChatStream); any other answer (an error status, or a server that
 * ignores `stream` and answers JSON, as some local ones do) is read whole,
 * as PostJson reads it, and judged as today.
 *
 * The retries (BrainRetry) cover the exchange up to those headers; once the
 * events flow, nothing is asked again, so no text reaches a listener twice.
 * A stream that stops short (the server closes, no more of the answer
 * arrives within the timeout, keep-alives or not) fails as a transient
 * BrainError ("timeout"): the turn answers with the apology and stores
 * nothing of the half answer.
 */
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as Headers from "effect/http/Headers"
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Pull from "effect/Pull"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import * as Sse from "effect/encoding/Sse"
import * as Stream from "effect/Stream"
import { type BrainEvent, BrainError, preview } from "../ports/Brain.js"
import { rootCause } from "../runtime/Errors.js"
import { ANSWER_MAX_BYTES, answerTooLarge as tooLarge, type HttpAnswer, readCapped, sendJson } from "./PostJson.js"

/** An answer whose body is events, assembled (`events`), or read whole (`body`, as PostJson's). */
export interface StreamingAnswer extends HttpAnswer {
  readonly events: Stream.Stream<BrainEvent, BrainError> | undefined
}

/** Whether `answer` (as BrainRetry hands it back) is a stream of events. */
export const eventsOf = (answer: HttpAnswer): Stream.Stream<BrainEvent, BrainError> | undefined =>
  "events" in answer ? (answer as StreamingAnswer).events : undefined

/** How a stream that stops short is told. */
export interface StreamWords {
  /** The detail when no more of the answer arrives for `timeout`. */
  readonly silent: string
  readonly scrub: (text: string) => string
}

const isEventStream = (status: number, headers: Headers.Headers): boolean =>
  status >= 200 && status < 300 && (headers["content-type"] ?? "").toLowerCase().startsWith("text/event-stream")

const absolute = (location: string | undefined, base: string): string | undefined =>
  location === undefined ? undefined : URL.canParse(location, base) ? new URL(location, base).href : location

/**
 * How one API's events make brain events, made afresh for each answer:
 * `take` adds what an event makes (most make nothing) to `out`, and says
 * whether the event carried any of the answer (`true`) or nothing (`false`:
 * a keep-alive, a type this version does not know), or why the answer fails
 * there; `finish` is the whole answer once the events end.
 */
export interface Assembly {
  readonly take: (event: Sse.Event, out: Array<BrainEvent>) => BrainError | boolean
  readonly finish: () => Effect.Effect<BrainEvent, BrainError>
}

/** How a request ends: aborted (silence, failure, a consumer gone), or with its body read to the end. */
interface RequestEnd {
  readonly abort: Effect.Effect<void>
  readonly bodyRead: () => void
}

/** The end of the body, as read by `answerEvents` (an empty batch never comes from a stream). */
const ENDED: ReadonlyArray<Uint8Array> = []

/**
 * The brain events of a body: its bytes counted against ANSWER_MAX_BYTES,
 * decoded as UTF-8, parsed by Effect's SSE parser (`retry:` directives are
 * for browsers reconnecting, and ignored) and assembled (`assembly`), the
 * wait for each event that carries the answer bounded by `timeout`: a
 * server's keep-alives (comments, pings, empty chunks) do not extend it, or
 * a server that pings forever would hold the turn forever.
 *
 * One step per read of the body, written here rather than as Effect's
 * stream operators (mapError, timeoutOrElse, tap, decodeText, mapEffect,
 * flattenIterable, then mapEffect, flattenIterable and concat to assemble):
 * each of those is a stage with its own pull per element, and a streamed
 * answer spent ≈ 930 µs of CPU in them against a canned client (issue 52;
 * Stream.timeoutOrElse alone ≈ 120 µs, as it merges the stream with a timer
 * fiber). The silence is watched by one fiber for the whole answer, which
 * ends the request (`request.abort`) once the reads since the answer's last
 * event have waited `timeout`: an Effect.timeout on each read raced a timer
 * fiber against it, about 24 µs of every read of a streamed answer.
 */
const answerEvents = (
  bytes: Stream.Stream<Uint8Array, HttpClientError.HttpClientError>,
  timeout: Duration.Duration,
  words: StreamWords,
  assembly: () => Assembly,
  request: RequestEnd
): Stream.Stream<BrainEvent, BrainError> =>
  Stream.transformPull(bytes, (upstream, scope) =>
    Effect.gen(function*() {
      const assembling = assembly()
      const decoder = new TextDecoder()
      let out: Array<BrainEvent> = []
      let failure: BrainError | undefined
      let size = 0
      let ended = false
      // Whether an event of the last read carried the answer; whether bytes came in the wait that carried none
      // of it (keep-alives, or an event the server never finished: the words below say keep-alives for both).
      let carried = false
      let heard = false
      // Whether the body has ended: an event still pending then is the last one, sent without its blank line.
      let flushing = false
      const parser = Sse.makeParser((event) => {
        if (failure !== undefined || event._tag !== "Event") return
        const taken = assembling.take(event, out)
        if (taken === true) carried = true
        // A last event cut short is not JSON: it is dropped, and `finish` says the answer ended before its end.
        else if (taken !== false && !(flushing && dataOf(event) === undefined)) failure = taken
      }, { maxEventSize: ANSWER_MAX_BYTES })

      // When the wait for the answer's next event began (Effect's clock): set by the first read
      // after one that carried the answer, kept across reads that bring only keep-alives, and
      // undefined while the consumer holds what came (a consumer slow to pull is not a silent
      // server). Past `timeout`, the watchdog ends the request.
      const clock = yield* Clock.Clock
      const timeoutMillis = Duration.toMillis(timeout)
      let waitingSince: number | undefined
      let silent = false
      const watch: Effect.Effect<void> = Effect.suspend(() => {
        const since = waitingSince
        const waited = since === undefined ? 0 : clock.currentTimeMillisUnsafe() - since
        if (waited < timeoutMillis) return Effect.flatMap(Effect.sleep(timeoutMillis - waited), () => watch)
        silent = true
        return request.abort
      })
      yield* Effect.forkIn(watch, scope)

      const read = Effect.suspend(() => {
        waitingSince ??= clock.currentTimeMillisUnsafe()
        return upstream
      }).pipe(
        Effect.mapError((error) =>
          Cause.isDone(error) ? error : new BrainError({
            reason: "timeout",
            detail: !silent
              ? `the answer broke off: ${preview(words.scrub(rootCause(error.cause ?? error)))}`
              : heard
              ? `${words.silent} (the server sent only keep-alives)`
              : words.silent
          })
        ),
        Pull.catchDone(() => {
          waitingSince = undefined
          request.bodyRead()
          return Effect.succeed(ENDED)
        })
      )

      const next = (): Pull.Pull<Arr.NonEmptyReadonlyArray<BrainEvent>, BrainError> => {
        if (Arr.isArrayNonEmpty(out)) {
          const batch = out
          out = []
          return Effect.succeed(batch)
        }
        if (failure !== undefined) return Effect.fail(failure)
        if (ended) return Cause.done()
        return Effect.flatMap(read, (chunks) => chunks === ENDED ? end() : fed(chunks))
      }

      // Events before a failing one are passed on, then the failure, as they came.
      const fed = (chunks: ReadonlyArray<Uint8Array>) => {
        for (const chunk of chunks) {
          size += chunk.length
          if (size > ANSWER_MAX_BYTES) {
            failure = tooLarge
            break
          }
          const before = out.length
          const tooLong = parser.feed(decoder.decode(chunk, { stream: true }))
          if (tooLong !== undefined) {
            out.length = before
            failure = new BrainError({ reason: "fatal", detail: tooLong.message })
          }
          if (failure !== undefined) break
        }
        if (carried) {
          carried = false
          heard = false
          waitingSince = undefined
        } else heard = true
        return next()
      }

      // A server (or a gateway before it) may close right after its last event, without the blank line
      // that ends it: that event is taken, as the OpenAI SDK takes it, rather than the whole answer lost.
      const end = () => {
        ended = true
        flushing = true
        const tooLong = parser.feed(`${decoder.decode()}\n\n`)
        if (tooLong !== undefined) failure ??= new BrainError({ reason: "fatal", detail: tooLong.message })
        if (failure !== undefined) return next()
        return Effect.flatMap(assembling.finish(), (answer) => {
          out.push(answer)
          return next()
        })
      }

      return Effect.suspend(next)
    }))

/**
 * POSTs a JSON `body`; an event stream is answered at its headers, with its
 * events (assembled by `assembly`) bounded by `timeout` between those that
 * carry the answer, anything else read whole. A redirect is an answer, never
 * followed (PostJson).
 *
 * The request belongs to a scope of its own, closed (which aborts it) when
 * the answer falls silent (answerEvents), fails, or is left unread when the
 * caller's scope (a brain's stream) ends. A body read to its end is not
 * aborted: the abort built a `DOMException` and signalled the transport for
 * nothing, about 35 µs of every streamed answer.
 */
export const postForEvents = (
  client: HttpClient.HttpClient,
  url: string,
  headers: Record<string, string>,
  body: string,
  timeout: Duration.Duration,
  words: StreamWords,
  assembly: () => Assembly
): Effect.Effect<StreamingAnswer, HttpClientError.HttpClientError | BrainError, Scope.Scope> =>
  Effect.gen(function*() {
    const owner = yield* Scope.make()
    let read = false
    const abort = Scope.close(owner, Exit.void)
    yield* Effect.addFinalizer(() => read ? Effect.void : abort)
    const request: RequestEnd = { abort, bodyRead: () => read = true }
    return yield* sendJson(HttpClient.withScope(client), url, headers, body).pipe(
      Scope.provide(owner),
      Effect.flatMap((response): Effect.Effect<StreamingAnswer, HttpClientError.HttpClientError | BrainError> => {
        // Read once: a client may build the headers anew at each reading (undici's does).
        const answered = response.headers
        const head = {
          status: response.status,
          retryAfter: answered["retry-after"],
          location: absolute(answered["location"], url)
        }
        return isEventStream(head.status, answered)
          ? Effect.succeed({ ...head, body: "", events: answerEvents(response.stream, timeout, words, assembly, request) })
          : Effect.map(readCapped(response, answered), (text) => {
            request.bodyRead()
            return { ...head, body: text, events: undefined }
          })
      }),
      // No events to read: the request ends here, not with the caller's scope.
      Effect.onError(() => abort)
    )
  })

/** An event's `data` as JSON; undefined when it is not. */
export const dataOf = (event: Sse.Event): unknown => Result.getOrUndefined(Result.try(() => JSON.parse(event.data) as unknown))
