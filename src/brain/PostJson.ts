/**
 * One HTTP exchange of a brain: POST a JSON body, read the answer whatever
 * its status. A redirect is an answer, never followed, and the body is read
 * up to a bound, so a server cannot take the key elsewhere or fill the memory.
 */
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import type * as Headers from "effect/http/Headers"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { BrainError } from "../ports/Brain.js"

/** An HTTP answer, whatever its status. */
export interface HttpAnswer {
  readonly status: number
  readonly retryAfter: string | undefined
  /** Where a redirect points, made absolute against the request's URL. */
  readonly location: string | undefined
  readonly body: string
}

// A redirect is never followed: fetch would carry the key (x-api-key, which
// it does not strip across origins) to whatever host the answer names.
const noRedirects: globalThis.RequestInit = { redirect: "manual" }

const absolute = (location: string | undefined, base: string): string | undefined =>
  location === undefined ? undefined : URL.canParse(location, base) ? new URL(location, base).href : location

/** The most of an answer read: far beyond any real one, short of a body that never ends filling the memory. */
export const ANSWER_MAX_BYTES = 32 * 1024 * 1024

/** Said of an answer past ANSWER_MAX_BYTES, whole or streamed. */
export const answerTooLarge = new BrainError({
  reason: "fatal",
  detail: `the API's answer was larger than ${ANSWER_MAX_BYTES / (1024 * 1024)} MiB`
})

/** The body as text, read as it streams in and dropped once it passes ANSWER_MAX_BYTES. */
export const readCapped = (
  response: HttpClientResponse.HttpClientResponse,
  headers: Headers.Headers = response.headers
): Effect.Effect<string, HttpClientError.HttpClientError | BrainError> => {
  const length = headers["content-length"]
  const announced = Number(length)
  if (announced > ANSWER_MAX_BYTES) return Effect.fail(answerTooLarge)
  // An announced length is all the HTTP/1.1 parser reads: the body in one piece, without a stream's machinery per chunk.
  if (length !== undefined && Number.isSafeInteger(announced)) return response.text
  const chunks: Array<Uint8Array> = []
  let size = 0
  return response.stream.pipe(
    Stream.runForEach((chunk) => {
      size += chunk.length
      if (size > ANSWER_MAX_BYTES) return Effect.fail(answerTooLarge)
      chunks.push(chunk)
      return Effect.void
    }),
    Effect.map(() => new TextDecoder().decode(Buffer.concat(chunks)))
  )
}

/**
 * POSTs a JSON `body` to a brain's API, whole answers and streamed ones
 * alike: a redirect is an answer, never followed (it would carry the key),
 * and no trace headers go out.
 */
export const sendJson = <R = never>(
  client: HttpClient.HttpClient.With<HttpClientError.HttpClientError, R>,
  url: string,
  headers: Record<string, string>,
  body: string
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError, R> =>
  HttpClientRequest.post(url).pipe(
    HttpClientRequest.setHeaders(headers),
    HttpClientRequest.bodyText(body, "application/json"),
    client.execute,
    // Read by the fetch client at each request; other clients (undici's) do not follow redirects.
    Effect.provideService(FetchHttpClient.RequestInit, noRedirects),
    // Trace headers are no business of the API's.
    Effect.provideService(HttpClient.TracerPropagationEnabled, false)
  )

/**
 * POSTs a JSON `body` and reads the whole answer, up to ANSWER_MAX_BYTES (a
 * fatal BrainError past it); a redirect is an answer, not followed.
 */
export const postJson = (
  client: HttpClient.HttpClient,
  url: string,
  headers: Record<string, string>,
  body: string
): Effect.Effect<HttpAnswer, HttpClientError.HttpClientError | BrainError> =>
  sendJson(client, url, headers, body).pipe(
    Effect.flatMap((response) => {
      // Read once: a client may build the headers anew at each reading (undici's does).
      const answered = response.headers
      return Effect.map(readCapped(response, answered), (text) => ({
        status: response.status,
        retryAfter: answered["retry-after"],
        location: absolute(answered["location"], url),
        body: text
      }))
    })
  )
