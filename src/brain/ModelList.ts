/**
 * A model the server does not serve, answered with the models it does: when
 * an API answers 404 about the model (Anthropic's `not_found_error` "model:
 * X", OpenAI's `model_not_found`, Ollama's "model \"X\" not found"), the
 * brain lists the server's models (`GET /v1/models` on both APIs) and says
 * "model X is not served here; it offers: a, b, c". A server that does not
 * list them leaves the plain answer as it was.
 */
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import { preview } from "../ports/Brain.js"
import { isJsonObject } from "../runtime/Json.js"

/** How a brain lists its server's models, and the model a request asked for. */
export interface ModelListing {
  readonly model: string
  /** The ids the server lists, or none when it lists nothing readable. */
  readonly offered: Effect.Effect<Option.Option<ReadonlyArray<string>>>
}

const parse = (body: string): unknown => Result.getOrUndefined(Result.try(() => JSON.parse(body) as unknown))

/** Whether a 404's error body is about the model rather than the address. */
export const saysModelUnknown = (status: number, body: string): boolean => {
  if (status !== 404) return false
  const parsed = parse(body)
  const error = isJsonObject(parsed) ? parsed.error : undefined
  if (typeof error === "string") return /\bmodel\b/i.test(error)
  if (!isJsonObject(error)) return false
  return error.code === "model_not_found" || (typeof error.message === "string" && /\bmodel\b/i.test(error.message))
}

/** The model ids of a listing (`{"data":[{"id":…}]}`), or undefined for any other body. */
export const idsOf = (body: string): ReadonlyArray<string> | undefined => {
  const parsed = parse(body)
  const data = isJsonObject(parsed) ? parsed.data : undefined
  return Array.isArray(data) ? data.flatMap((entry) => isJsonObject(entry) && typeof entry.id === "string" ? [entry.id] : []) : undefined
}

/** At most this many names are said; the rest are counted. */
const SHOWN = 12

/** `model X is not served here; it offers: a, b, c` (the names cut short and on one line: they are the server's text). */
export const notServed = (model: string, offered: ReadonlyArray<string>): string => {
  const names = offered.slice(0, SHOWN).map((id) => preview(id.replace(/\p{Cc}/gu, " "), 60))
  const more = offered.length > SHOWN ? ` and ${offered.length - SHOWN} more` : ""
  return offered.length === 0
    ? `model ${preview(model, 60)} is not served here; it lists no models`
    : `model ${preview(model, 60)} is not served here; it offers: ${names.join(", ")}${more}`
}

/** A listing is small; a body past this is no listing. */
const LISTING_MAX_BYTES = 4 * 1024 * 1024
const LISTING_TIMEOUT = Duration.seconds(10)

/**
 * `GET url` with `headers`, never following a redirect (it would carry the
 * key elsewhere), read up to LISTING_MAX_BYTES within `timeout` (at most
 * 10 s): the ids of a 200 listing, none on anything else.
 */
export const fetchIds = (
  client: HttpClient.HttpClient,
  url: string,
  headers: Record<string, string>,
  timeout: Duration.Duration
): Effect.Effect<Option.Option<ReadonlyArray<string>>> => {
  const chunks: Array<Uint8Array> = []
  let size = 0
  return HttpClientRequest.get(url).pipe(
    HttpClientRequest.setHeaders(headers),
    client.execute,
    Effect.provideService(FetchHttpClient.RequestInit, { redirect: "manual" }),
    Effect.provideService(HttpClient.TracerPropagationEnabled, false),
    Effect.flatMap((response) =>
      response.status !== 200 ? Effect.succeed(undefined) : response.stream.pipe(
        Stream.runForEach((chunk) => {
          size += chunk.length
          if (size > LISTING_MAX_BYTES) return Effect.fail("too large" as const)
          chunks.push(chunk)
          return Effect.void
        }),
        Effect.map(() => idsOf(new TextDecoder().decode(Buffer.concat(chunks))))
      )
    ),
    Effect.timeoutOption(Duration.min(timeout, LISTING_TIMEOUT)),
    Effect.map((ids) => Option.fromNullishOr(Option.getOrUndefined(ids))),
    Effect.catch(() => Effect.succeed(Option.none()))
  )
}
