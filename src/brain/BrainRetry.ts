/**
 * What the HTTP brains (Anthropic, OpenAI-compatible) share: their two retry
 * settings, declared once here, the base URL check, and the attempt loop. Each attempt is one
 * exchange bounded by the timeout; a failure worth repeating (no connection,
 * no answer in time, a transient status) is retried under `retrySchedule`
 * and, once the retries are spent, becomes `BrainError("timeout")`. A
 * request that could not even be built is `BrainError("fatal")` at once.
 */
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { BrainError, type Misconfigured, preview } from "../ports/Brain.js"
import { numberOf, textOf } from "../config/ConfigRange.js"
import type { TextSetting } from "../config/Setting.js"
import { BrainRetries, BrainTimeout, MaxTokens, Model } from "../config/settings/Brain.js"
import { HistoryKeep } from "../config/settings/Memory.js"
import { rootCause } from "../runtime/Errors.js"
import { isRetryableStatus, saysContextTooLong, saysOutOfCredit } from "./FailedAnswers.js"
import type { HttpAnswer } from "./PostJson.js"
import * as ModelList from "./ModelList.js"
import * as Unreachable from "./Unreachable.js"

/** Seconds per HTTP attempt; also read by the agent's patience on the brain pipes (Bridges). */
export const BrainTimeoutConfig = numberOf(BrainTimeout)
/** Retries after the first attempt; also read by the agent's patience on the brain pipes (Bridges). */
export const BrainRetriesConfig = numberOf(BrainRetries)

/** Whether `value` is a base URL an API's path can follow. */
const isBaseUrl = (value: string): boolean => {
  // Credentials: fetch refuses such a URL, and its error would carry the password into the log.
  // A query or fragment: the API's path is added after the base, so it would land inside them.
  if (!URL.canParse(value) || value.includes("?") || value.includes("#")) return false
  const url = new URL(value)
  return ["http:", "https:"].includes(url.protocol) && url.username === "" && url.password === ""
}

/** An API's base URL setting: http(s) only, without credentials, its default when unset. */
export const baseUrlConfig = (setting: TextSetting & { readonly default: string }): Config.Config<string> =>
  textOf(setting, (value) =>
    isBaseUrl(value)
      ? { value }
      : `Expected an http(s) URL without credentials (no user:password@; the API key has a setting of its own) ` +
        `and without a query or fragment (no ? or #), such as ${setting.default}`)

/** The retry settings of every HTTP brain. */
export const BrainRetryConfig = Config.all({
  timeout: BrainTimeoutConfig.pipe(Config.map(Duration.seconds)),
  retries: BrainRetriesConfig
})
export type BrainRetryConfig = Config.Success<typeof BrainRetryConfig>

/**
 * A failed attempt worth repeating: no connection, no answer in time, or a
 * status the API documents as transient. `retryAfter` is the server's
 * `retry-after`, already capped.
 */
export class RetryableFailure extends Data.TaggedError("RetryableFailure")<{
  readonly detail: string
  readonly retryAfter: Option.Option<Duration.Duration>
  /** Set when the server could not be reached at all (refused, unknown host): see Unreachable. */
  readonly unreachable?: Misconfigured
}> {}

export type AttemptFailure = RetryableFailure | BrainError

export const BACKOFF_BASE = Duration.seconds(1)
export const BACKOFF_CAP = Duration.seconds(30)
export const RETRY_AFTER_CAP = Duration.seconds(60)

/**
 * The retry policy: while the failure is retryable and at most `retries`
 * times, wait what the server asked for in `retry-after` (capped at
 * RETRY_AFTER_CAP), otherwise 1s, 2s, 4s, … with ±20% jitter, capped at
 * BACKOFF_CAP.
 */
export const retrySchedule = (
  retries: number,
  giveUpWhenUnreachable = false
): Schedule.Schedule<Duration.Duration, AttemptFailure> =>
  Schedule.exponential(BACKOFF_BASE, 2).pipe(
    Schedule.jittered,
    Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, BACKOFF_CAP))),
    Schedule.setInputType<AttemptFailure>(),
    Schedule.modifyDelay(({ duration, input }) =>
      Effect.succeed(input._tag === "RetryableFailure" ? Option.getOrElse(input.retryAfter, () => duration) : duration)
    ),
    Schedule.while(({ input }) =>
      input._tag === "RetryableFailure" && !(giveUpWhenUnreachable && input.unreachable !== undefined)
    ),
    Schedule.upTo({ times: retries })
  )

// An HTTP-date as RFC 9110 sends it (IMF-fixdate): Date.parse alone reads "-1" or "1 2" as dates.
const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/

/**
 * `retry-after` as a whole number of seconds or an HTTP-date (IMF-fixdate),
 * capped; absent or anything else gives none, and the backoff applies.
 */
export const parseRetryAfter = (value: string | undefined, nowMillis: number): Option.Option<Duration.Duration> => {
  if (value === undefined) return Option.none()
  const trimmed = value.trim()
  const millis = /^\d+$/.test(trimmed)
    ? Number(trimmed) * 1000
    : IMF_FIXDATE.test(trimmed)
    ? Date.parse(trimmed) - nowMillis
    : Number.NaN
  return Number.isNaN(millis)
    ? Option.none()
    : Option.some(Duration.min(Duration.millis(Math.max(0, millis)), RETRY_AFTER_CAP))
}

/** How one brain words and reports what happens to an attempt. */
export interface AttemptReport {
  /** The detail when no answer came within the timeout. */
  readonly noAnswer: string
  /** The detail when the server could not be reached, for `reason` (the root cause, scrubbed and cut). */
  readonly unreachable: (reason: string) => string
  /** Takes the key out of any text that may hold it. */
  readonly scrub: (text: string) => string
  readonly debug: (line: string) => Effect.Effect<void>
  /** The API's address: a refused connection or an unknown host is said with it (Unreachable). */
  readonly address?: Unreachable.BrainAddress
}

/**
 * One exchange under `timeout`. An answer (any status) goes to `answered`,
 * with the time it arrived and a debug prefix (`attempt N, M ms`); no
 * answer is a RetryableFailure, a request that could not be built a fatal
 * BrainError.
 */
export const attemptExchange = <A, R = never>(
  exchange: Effect.Effect<HttpAnswer, HttpClientError.HttpClientError | BrainError, R>,
  timeout: Duration.Duration,
  number: number,
  report: AttemptReport,
  answered: (answer: HttpAnswer, nowMillis: number, after: string) => Effect.Effect<A, AttemptFailure, R>
): Effect.Effect<A, AttemptFailure, R> =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const outcome = yield* exchange.pipe(Effect.timeout(timeout), Effect.result)
    const now = yield* Clock.currentTimeMillis
    const after = `attempt ${number}, ${now - started} ms`
    if (Result.isSuccess(outcome)) return yield* answered(outcome.success, now, after)
    const error: HttpClientError.HttpClientError | BrainError | Cause.TimeoutError = outcome.failure
    if (error._tag === "BrainError") {
      yield* report.debug(`${after}: ${error.detail}`)
      return yield* error
    }
    if (error._tag === "HttpClientError" && (error.reason._tag === "EncodeError" || error.reason._tag === "InvalidUrlError")) {
      yield* report.debug(`${after}: request not sent: ${error.message}`)
      return yield* new BrainError({ reason: "fatal", detail: `request not sent: ${report.scrub(error.message)}` })
    }
    if (error._tag === "TimeoutError") {
      yield* report.debug(`${after}: ${report.noAnswer}`)
      return yield* new RetryableFailure({ detail: report.noAnswer, retryAfter: Option.none() })
    }
    const cause = report.unreachable(preview(report.scrub(rootCause(error.cause ?? error))))
    yield* report.debug(`${after}: ${cause}`)
    const kind = report.address === undefined ? undefined : Unreachable.classify(error)
    return yield* kind === undefined || report.address === undefined
      ? new RetryableFailure({ detail: cause, retryAfter: Option.none() })
      : new RetryableFailure({
        detail: report.scrub(Unreachable.describe(kind, report.address)),
        retryAfter: Option.none(),
        unreachable: Unreachable.misconfigured(kind, report.address)
      })
  })

/** How one brain reads an HTTP answer: its body when it succeeded, and what a failed one means. */
export interface AnswerReading<A> {
  readonly decode: (body: string) => Effect.Effect<A, BrainError>
  /** The API's own words from an error body, scrubbed of the key. */
  readonly said: (body: string) => string
  /** The setting that holds the API's address, named when it answers with a redirect. */
  readonly baseUrlSetting: string
  /** The setting that holds the API key, named when its account is out of credit. */
  readonly keySetting: string
  readonly scrub: (text: string) => string
  /** For a status that will not change its mind: what to fix, and which setting is wrong. */
  readonly permanent: (status: number) => { readonly fix?: string; readonly misconfigured?: Misconfigured }
  /** How to list the server's models, for an answer that the model is unknown (ModelList). */
  readonly models?: ModelList.ModelListing
}

/**
 * One answer judged the same way for every HTTP brain: 2xx is decoded, a
 * transient status retried (honouring retry-after) unless it says the
 * account is out of credit (FailedAnswers.saysOutOfCredit: fatal, naming the key), a redirect a fatal
 * misconfiguration of the base URL, anything else a fatal BrainError that
 * says what to fix, never a secret; a 404 about the model says the models
 * the server offers, when it lists them (ModelList).
 */
export const judgeAnswer = <A>(
  reading: AnswerReading<A>,
  debug: (line: string) => Effect.Effect<void>
) =>
(answer: HttpAnswer, nowMillis: number, after: string): Effect.Effect<A, AttemptFailure> =>
  Effect.gen(function*() {
    const { retryAfter, status } = answer
    if (status >= 200 && status < 300) {
      yield* debug(`${after}: HTTP ${status}`)
      yield* debug(`response ${answer.body}`)
      return yield* reading.decode(answer.body)
    }
    if (status >= 300 && status < 400) {
      const where = answer.location === undefined ? "nowhere (no location)" : preview(reading.scrub(answer.location))
      const redirect = `HTTP ${status}: the API answered with a redirect to ${where}: fix ${reading.baseUrlSetting}`
      yield* debug(`${after}: ${redirect}`)
      return yield* new BrainError({
        reason: "fatal",
        detail: redirect,
        misconfigured: { problem: "the API address redirects elsewhere", setting: reading.baseUrlSetting }
      })
    }
    const detail = `HTTP ${status}: ${reading.said(answer.body)}`
    yield* debug(`${after}: ${detail}`)
    if (saysContextTooLong(status, answer.body)) {
      return yield* new BrainError({
        reason: "fatal",
        detail: `${detail} (the conversation and the answer's cap do not fit the model's context window: send /compact, ` +
          `lower ${HistoryKeep.key} or ${MaxTokens.key}, or give a local model server a larger context)`,
        misconfigured: { problem: "the conversation is longer than the model's context window", setting: HistoryKeep.key }
      })
    }
    if (saysOutOfCredit(status, answer.body)) {
      return yield* new BrainError({
        reason: "fatal",
        detail: `${detail} (the account behind ${reading.keySetting} is out of credit or quota: add credit or raise its limit with the provider)`,
        misconfigured: { problem: "the API account is out of credit or quota", setting: reading.keySetting }
      })
    }
    if (isRetryableStatus(status)) {
      return yield* new RetryableFailure({ detail, retryAfter: parseRetryAfter(retryAfter, nowMillis) })
    }
    if (reading.models !== undefined && ModelList.saysModelUnknown(status, answer.body)) {
      const { model, offered } = reading.models
      const listed = yield* offered
      if (Option.isSome(listed) && !listed.value.includes(model)) {
        const problem = reading.scrub(ModelList.notServed(model, listed.value))
        yield* debug(`${after}: ${problem}`)
        return yield* new BrainError({ reason: "fatal", detail: `${detail}: ${problem}`, misconfigured: { problem, setting: Model.key } })
      }
    }
    const { fix, misconfigured } = reading.permanent(status)
    return yield* new BrainError({
      reason: "fatal",
      detail: fix === undefined ? detail : `${detail} (${fix})`,
      ...(misconfigured === undefined ? {} : { misconfigured })
    })
  })

/**
 * Runs `attempt` (numbered from 1) until it succeeds, fails for good, or
 * the retries are spent; each failed retryable attempt is logged as a
 * warning naming `api`. Under GiveUpWhenUnreachable (a run) a server that
 * refuses the connection or whose host is unknown ends it at once, as a
 * fatal BrainError that names the address and the setting to check.
 *
 * The first attempt runs alone: the schedule and Effect.retry are set up
 * only once it has failed (about 12 of 17 µs per call here, and nearly
 * every call succeeds at once), its failure handed to them as the first.
 */
export const withRetries = <A, R = never>(
  api: string,
  retries: number,
  attempt: (number: number) => Effect.Effect<A, AttemptFailure, R>
): Effect.Effect<A, BrainError, R> =>
  Effect.flatMap(Effect.service(Unreachable.GiveUpWhenUnreachable), (giveUp) => {
    const final = (failure: RetryableFailure) => giveUp && failure.unreachable !== undefined
    let attempts = 0
    const next = Effect.suspend(() => {
      const number = ++attempts
      return attempt(number).pipe(
        Effect.tapErrorTag("RetryableFailure", (failure) =>
          // The failure that ends it is said once, by whoever reports the BrainError.
          final(failure) ? Effect.void : Effect.logWarning(`${api} attempt ${number} of ${retries + 1} failed: ${failure.detail}`))
      )
    })
    const givenUp = (failure: RetryableFailure): Effect.Effect<never, BrainError> =>
      Effect.fail(
        final(failure) && failure.unreachable !== undefined
          ? new BrainError({ reason: "fatal", detail: failure.detail, misconfigured: failure.unreachable })
          : new BrainError({
            reason: "timeout",
            detail: `gave up after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${failure.detail}`
          })
      )
    return Effect.catchTag(next, "RetryableFailure", (first) => {
      let replay: RetryableFailure | undefined = first
      const again = Effect.suspend(() => {
        const failed = replay
        replay = undefined
        return failed === undefined ? next : Effect.fail(failed)
      })
      return again.pipe(Effect.retry(retrySchedule(retries, giveUp)), Effect.catchTag("RetryableFailure", givenUp))
    })
  })
