/**
 * One bounded GET for doctor's network checks (the brain's API, Discord):
 * an answer with its status and body, a server that could not be reached,
 * or no answer within `probeTimeout`. Never retried: doctor reports what it
 * saw once, quickly.
 */
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import { preview } from "../../../ports/Brain.js"
import * as Unreachable from "../../../brain/Unreachable.js"
import { rootCause } from "../../../runtime/Errors.js"
import { isJsonObject } from "../../../runtime/Json.js"

export const probeTimeout = Duration.seconds(10)

export type ProbeResult =
  | { readonly _tag: "Answered"; readonly status: number; readonly body: string }
  | { readonly _tag: "Unreachable"; readonly detail: string; readonly kind: Unreachable.UnreachableKind | undefined }
  | { readonly _tag: "NoAnswer" }

/** The innermost system error of a failed fetch (`fetch failed` wraps `connect ECONNREFUSED …`). */
const transportDetail = (error: HttpClientError.HttpClientError): string => preview(rootCause(error.cause ?? error))

/** GET `url` with `headers`, bounded by `probeTimeout`; never fails. */
export const get = (url: string, headers: Record<string, string>): Effect.Effect<ProbeResult, never, HttpClient.HttpClient> =>
  Effect.flatMap(HttpClient.HttpClient, (client) =>
    HttpClientRequest.get(url).pipe(
      HttpClientRequest.setHeaders(headers),
      client.execute,
      // Never followed: fetch would carry the key (x-api-key) to the host a redirect names.
      Effect.provideService(FetchHttpClient.RequestInit, { redirect: "manual" }),
      Effect.flatMap((response) => Effect.map(response.text, (body) => ({ status: response.status, body }))),
      Effect.timeoutOption(probeTimeout),
      Effect.map(Option.match({
        onNone: (): ProbeResult => ({ _tag: "NoAnswer" }),
        onSome: ({ body, status }): ProbeResult => ({ _tag: "Answered", status, body })
      })),
      Effect.catch((error) =>
        Effect.succeed<ProbeResult>({ _tag: "Unreachable", detail: transportDetail(error), kind: Unreachable.classify(error) })
      )
    ))

/** A JSON body, or undefined. */
export const json = (body: string): unknown => Result.getOrUndefined(Result.try(() => JSON.parse(body) as unknown))

/**
 * The API's own words from an error body (`{"error":{"type","message"}}`, `{"message"}`), or an excerpt of it;
 * `scrub` takes the key out before the cut, which would leave a key straddling it unmatched.
 */
export const apiWords = (body: string, scrub: (text: string) => string): string => {
  const parsed = json(body)
  const error = isJsonObject(parsed) ? parsed.error : undefined
  const words = isJsonObject(error)
    ? [error.type, error.message]
    : isJsonObject(parsed) ? [parsed.message] : typeof error === "string" ? [error] : []
  const found = words.filter((part): part is string => typeof part === "string")
  if (found.length > 0) return preview(scrub(found.join(": ")))
  return body.trim() === "" ? "(empty body)" : preview(scrub(body))
}

/** A base URL as it may be shown: no user, password, query or trailing slash. */
export const shownUrl = (raw: string): string => {
  const url = new URL(raw)
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "")
}

/** `text` with the key replaced wherever it shows: an error body may echo it (Secrets.scrub). */
export { scrub } from "../../../config/Secrets.js"

export const seconds = Duration.format(probeTimeout)
