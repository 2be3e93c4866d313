/**
 * The Brain as the Anthropic Messages API: one `POST /v1/messages` per
 * request, each attempt bounded by a timeout, failed attempts retried under
 * `retrySchedule`. Retryable failures that outlast the retries become
 * `BrainError("timeout")`; an answer the API will not change its mind about
 * (400, 401, a body that is not a Messages response) becomes
 * `BrainError("fatal")` at once.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import {
  Brain,
  BrainError,
  type BrainService,
  decodeBrainAnswer,
  type MessagesRequest,
  type MessagesResponse,
  preview
} from "../Brain.js"
import { StartupError } from "../StartupError.js"
import { integerIn, secondsIn } from "../config/ConfigRange.js"
import { DebugConfig } from "../Logging.js"
import { headerSecret } from "../config/Secrets.js"

export const API_VERSION = "2023-06-01"
export const DEFAULT_BASE_URL = "https://api.anthropic.com"

const isHttpUrl = (value: string): boolean =>
  URL.canParse(value) && ["http:", "https:"].includes(new URL(value).protocol)


/** Seconds per HTTP attempt; also read by the agent's patience on the brain pipes (Bridges). */
export const BrainTimeoutConfig = secondsIn("PLANCKCLAW_BRAIN_TIMEOUT", { min: 0.1, max: 3600 }, 60)
/** Retries after the first attempt; also read by the agent's patience on the brain pipes (Bridges). */
export const BrainRetriesConfig = integerIn("PLANCKCLAW_BRAIN_RETRIES", { min: 0, max: 100 }, 4)

export const AnthropicConfig = Config.all({
  apiKey: headerSecret("ANTHROPIC_API_KEY"),
  baseUrl: Config.string("ANTHROPIC_BASE_URL").pipe(
    Config.validate({
      message: `Expected an http(s) URL such as ${DEFAULT_BASE_URL}`,
      validation: isHttpUrl
    }),
    Config.withDefault(DEFAULT_BASE_URL)
  ),
  timeout: BrainTimeoutConfig.pipe(Config.map(Duration.seconds)),
  retries: BrainRetriesConfig,
  debug: DebugConfig
})
export type AnthropicConfig = Config.Config.Success<typeof AnthropicConfig>

/**
 * A failed attempt worth repeating: no connection, no answer in time, or a
 * status the API documents as transient. `retryAfter` is the server's
 * `retry-after`, already capped.
 */
export class RetryableFailure extends Data.TaggedError("RetryableFailure")<{
  readonly detail: string
  readonly retryAfter: Option.Option<Duration.Duration>
}> {}

export type AttemptFailure = RetryableFailure | BrainError

export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504, 529])
export const BACKOFF_BASE = Duration.seconds(1)
export const BACKOFF_CAP = Duration.seconds(30)
export const RETRY_AFTER_CAP = Duration.seconds(60)

/**
 * The retry policy: while the failure is retryable and at most `retries`
 * times, wait what the server asked for in `retry-after` (capped at
 * RETRY_AFTER_CAP), otherwise 1s, 2s, 4s, … with ±20% jitter, capped at
 * BACKOFF_CAP.
 */
export const retrySchedule = (retries: number): Schedule.Schedule<unknown, AttemptFailure> => {
  const backoff = Schedule.exponential(BACKOFF_BASE, 2).pipe(
    Schedule.jittered,
    Schedule.modifyDelay((_, delay) => Duration.min(delay, BACKOFF_CAP))
  )
  return Schedule.identity<AttemptFailure>().pipe(
    Schedule.intersect(backoff),
    Schedule.modifyDelay(([failure], delay) =>
      failure._tag === "RetryableFailure" ? Option.getOrElse(failure.retryAfter, () => delay) : delay
    ),
    Schedule.whileInput((failure: AttemptFailure) => failure._tag === "RetryableFailure"),
    Schedule.intersect(Schedule.recurs(retries))
  )
}

/** `retry-after` in seconds or as an HTTP date, capped; absent or unreadable gives none. */
export const parseRetryAfter = (value: string | undefined, nowMillis: number): Option.Option<Duration.Duration> => {
  if (value === undefined) return Option.none()
  const trimmed = value.trim()
  const millis = /^\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - nowMillis
  return Number.isNaN(millis)
    ? Option.none()
    : Option.some(Duration.min(Duration.millis(Math.max(0, millis)), RETRY_AFTER_CAP))
}

/** The API's own words from an error body (`{"error":{"type","message"}}`), or an excerpt of the body. */
const describeErrorBody = (body: string): string => {
  const parsed = Either.getOrUndefined(Either.try(() => JSON.parse(body) as unknown))
  const error = typeof parsed === "object" && parsed !== null ? (parsed as { error?: unknown }).error : undefined
  if (typeof error === "object" && error !== null) {
    const { message, type } = error as { type?: unknown; message?: unknown }
    const words = [type, message].filter((part): part is string => typeof part === "string")
    if (words.length > 0) return preview(words.join(": "))
  }
  return body.trim() === "" ? "(empty body)" : preview(body)
}

const describeTransportError = (error: HttpClientError.HttpClientError): string => {
  const cause: unknown = error.cause
  if (!(cause instanceof Error)) return `connection failed: ${preview(error.message)}`
  const code = (cause as { code?: unknown }).code
  const withCode = typeof code === "string" && !cause.message.includes(code) ? `${cause.message} (${code})` : cause.message
  return `connection failed: ${preview(withCode)}`
}

interface Exchange {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly body: string
}

export const make = (config: AnthropicConfig): Effect.Effect<BrainService, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    // Trace headers are no business of the API's.
    const client = (yield* HttpClient.HttpClient).pipe(HttpClient.withTracerPropagation(false))
    const url = `${config.baseUrl.replace(/\/+$/, "")}/v1/messages`
    const apiKey = Redacted.value(config.apiKey)
    const timeoutSeconds = Duration.toSeconds(config.timeout)
    // Defence in depth: whatever the server echoes, the key never leaves in a detail or debug line.
    const scrub = (text: string): string => apiKey === "" ? text : text.split(apiKey).join("<redacted>")
    const debug = (line: string): Effect.Effect<void> =>
      config.debug ? Console.error(`[planckclaw brain] ${scrub(line)}`) : Effect.void

    const exchange = (body: string): Effect.Effect<Exchange, HttpClientError.HttpClientError> =>
      HttpClientRequest.post(url).pipe(
        HttpClientRequest.setHeaders({ "x-api-key": apiKey, "anthropic-version": API_VERSION }),
        HttpClientRequest.bodyText(body, "application/json"),
        client.execute,
        Effect.flatMap((response) =>
          Effect.map(response.text, (text) => ({
            status: response.status,
            retryAfter: response.headers["retry-after"],
            body: text
          }))
        )
      )

    const attempt = (body: string, number: number): Effect.Effect<MessagesResponse, AttemptFailure> =>
      Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        const outcome = yield* exchange(body).pipe(Effect.timeout(config.timeout), Effect.either)
        const now = yield* Clock.currentTimeMillis
        const after = `attempt ${number}, ${now - started} ms`
        if (Either.isLeft(outcome)) {
          const error = outcome.left
          if (error._tag === "RequestError" && error.reason !== "Transport") {
            yield* debug(`${after}: request not sent: ${error.message}`)
            return yield* new BrainError({ reason: "fatal", detail: `request not sent: ${scrub(error.message)}` })
          }
          const detail = error._tag === "TimeoutException"
            ? `no answer within ${timeoutSeconds}s`
            : scrub(describeTransportError(error))
          yield* debug(`${after}: ${detail}`)
          return yield* new RetryableFailure({ detail, retryAfter: Option.none() })
        }
        const { body: answer, retryAfter, status } = outcome.right
        if (status >= 200 && status < 300) {
          yield* debug(`${after}: HTTP ${status}`)
          yield* debug(`response ${answer}`)
          return yield* decodeBrainAnswer(answer).pipe(
            Effect.mapError((error) => new BrainError({ reason: error.reason, detail: scrub(error.detail) }))
          )
        }
        const detail = `HTTP ${status}: ${scrub(describeErrorBody(answer))}`
        yield* debug(`${after}: ${detail}`)
        if (RETRYABLE_STATUSES.has(status)) {
          return yield* new RetryableFailure({ detail, retryAfter: parseRetryAfter(retryAfter, now) })
        }
        return yield* new BrainError({ reason: "fatal", detail })
      }).pipe(
        Effect.tapErrorTag("RetryableFailure", (failure) =>
          Effect.logWarning(`Anthropic API attempt ${number} of ${config.retries + 1} failed: ${failure.detail}`))
      )

    const complete = (request: MessagesRequest) =>
      Effect.gen(function*() {
        const body = JSON.stringify(request)
        yield* debug(`POST ${url} (x-api-key: <redacted>, anthropic-version: ${API_VERSION})`)
        yield* debug(`request ${body}`)
        const attempts = yield* Ref.make(0)
        return yield* Ref.updateAndGet(attempts, (n) => n + 1).pipe(
          Effect.flatMap((number) => attempt(body, number)),
          Effect.retry(retrySchedule(config.retries)),
          Effect.catchTag("RetryableFailure", (failure) =>
            Effect.flatMap(Ref.get(attempts), (count) =>
              new BrainError({
                reason: "timeout",
                detail: `gave up after ${count} attempt${count === 1 ? "" : "s"}: ${failure.detail}`
              })))
        )
      })

    return Brain.of({ complete })
  })

/** The key is unset (or empty); a key that is set but unusable is reported as itself. */
const missesApiKey = (error: ConfigError.ConfigError): boolean => {
  switch (error._op) {
    case "And":
    case "Or":
      return missesApiKey(error.left) || missesApiKey(error.right)
    case "MissingData":
      return error.path.includes("ANTHROPIC_API_KEY")
    default:
      return false
  }
}

export const missingApiKey = new StartupError({
  exitCode: 2,
  message:
    "ANTHROPIC_API_KEY is not set: add export ANTHROPIC_API_KEY=\"...\" to config.env (see config.env.example) or set it in the environment."
})

export const layer: Layer.Layer<Brain, ConfigError.ConfigError | StartupError, HttpClient.HttpClient> = Layer.effect(
  Brain,
  AnthropicConfig.pipe(
    Effect.mapError((error) => missesApiKey(error) ? missingApiKey : error),
    Effect.flatMap(make)
  )
)
