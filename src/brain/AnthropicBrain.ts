/**
 * The Brain as the Anthropic Messages API: one `POST /v1/messages` per
 * request (`stream` asks for server-sent events: AnthropicStream, SseResponse),
 * each attempt bounded by a timeout, failed attempts retried under
 * the shared schedule (BrainRetry). Retryable failures that outlast the
 * retries become `BrainError("timeout")`; an answer the API will not change
 * its mind about (400, 401, a body that is not a Messages response) becomes
 * `BrainError("fatal")` at once.
 */
import * as HttpClient from "effect/http/HttpClient"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import {
  answerEvent,
  Brain,
  type BrainEvent,
  type BrainService,
  decodeBrainAnswer,
  decodeBrainAnswerJson,
  type MessagesRequest,
  type MessagesResponse,
  preview,
  type BrainError,
  type Scrub
} from "../ports/Brain.js"
import { MissingSetting } from "../config/MissingSetting.js"
import * as Secrets from "../config/Secrets.js"
import { isJsonObject } from "../runtime/Json.js"
import * as KeptJson from "../runtime/KeptJson.js"
import { DebugConfig } from "../runtime/Logging.js"
import {
  type AnswerReading,
  type AttemptFailure,
  attemptExchange,
  baseUrlConfig,
  BrainRetryConfig,
  judgeAnswer,
  withRetries
} from "./BrainRetry.js"
import * as ModelList from "./ModelList.js"
import { postJson } from "./PostJson.js"
import { assembly } from "./AnthropicStream.js"
import { eventsOf, postForEvents } from "./SseResponse.js"
import { isUnset } from "../config/UnsetSetting.js"
import { AnthropicApiKey, AnthropicBaseUrl, Model } from "../config/settings/Brain.js"
import * as Tracing from "../runtime/Tracing.js"

// Bridges reads the brain's patience through these names; their home is BrainRetry.
export { BrainRetriesConfig, BrainTimeoutConfig } from "./BrainRetry.js"

export const API_VERSION = "2023-06-01"
export const DEFAULT_BASE_URL = AnthropicBaseUrl.default

export const AnthropicConfig = Config.all({
  apiKey: Secrets.headerSecret(AnthropicApiKey.key),
  baseUrl: baseUrlConfig(AnthropicBaseUrl),
  retry: BrainRetryConfig,
  debug: DebugConfig
}).pipe(Config.map(({ retry, ...own }) => ({ ...own, ...retry })))
export type AnthropicConfig = Config.Success<typeof AnthropicConfig>

/**
 * The API's own words from an error body (`{"error":{"type","message"}}`), or an excerpt of the body;
 * scrubbed before the cut, which would leave a key straddling it unmatched.
 */
const describeErrorBody = (body: string, scrub: Scrub): string => {
  const parsed = Result.getOrUndefined(Result.try(() => JSON.parse(body) as unknown))
  const error = isJsonObject(parsed) ? parsed.error : undefined
  if (isJsonObject(error)) {
    const words = [error.type, error.message].filter((part): part is string => typeof part === "string")
    if (words.length > 0) return preview(scrub(words.join(": ")))
  }
  return body.trim() === "" ? "(empty body)" : preview(scrub(body))
}

/**
 * A status the API will not change its mind about, as a setting to fix:
 * what the user is told, the key, and what the log adds. Undefined for any
 * other status (a plain fatal answer).
 */
export const misconfiguration = (
  status: number,
  model: string
): { readonly problem: string; readonly setting: string; readonly fix: string } | undefined => {
  switch (status) {
    case 401:
    case 403:
      return {
        problem: "the API key was refused",
        setting: AnthropicApiKey.key,
        fix: "check ANTHROPIC_API_KEY is a valid key for this API"
      }
    case 404:
      return {
        problem: "the model or API address is unknown",
        setting: Model.key,
        fix: `check PLANCKCLAW_MODEL (${model}) names a model this API serves, and ANTHROPIC_BASE_URL`
      }
    case 400:
      return {
        problem: "the API refused the request as invalid",
        setting: Model.key,
        fix: `check PLANCKCLAW_MODEL (${model}) and PLANCKCLAW_MAX_TOKENS are within the model's limits`
      }
    default:
      return undefined
  }
}

export const make = (config: AnthropicConfig): Effect.Effect<BrainService, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const base = config.baseUrl.replace(/\/+$/, "")
    const url = `${base}/v1/messages`
    const apiKey = Redacted.value(config.apiKey)
    const headers = { "x-api-key": apiKey, "anthropic-version": API_VERSION }
    // Defence in depth: whatever the server echoes, the key never leaves in a detail or debug line.
    const scrub = (text: string): string => Secrets.scrub(text, apiKey)
    const debug = (line: string): Effect.Effect<void> =>
      config.debug ? Console.error(`[planckclaw brain] ${scrub(line)}`) : Effect.void
    const report = {
      noAnswer: `no answer within ${Duration.toSeconds(config.timeout)}s`,
      unreachable: (reason: string) => `connection failed: cannot reach ${new URL(config.baseUrl).host}: ${reason}`,
      scrub,
      debug,
      address: { baseUrl: config.baseUrl, setting: AnthropicBaseUrl.key }
    }

    const reading = (model: string): AnswerReading<MessagesResponse> => ({
      decode: (body) => decodeBrainAnswer(body, scrub),
      said: (body) => describeErrorBody(body, scrub),
      baseUrlSetting: AnthropicBaseUrl.key,
      keySetting: AnthropicApiKey.key,
      scrub,
      // Built when a 404 asks for it, not for every call.
      models: {
        model,
        offered: Effect.suspend(() => ModelList.fetchIds(client, `${base}/v1/models?limit=1000`, headers, config.timeout))
      },
      permanent: (status) => {
        const wrong = misconfiguration(status, model)
        return wrong === undefined ? {} : { fix: wrong.fix, misconfigured: { problem: wrong.problem, setting: wrong.setting } }
      }
    })

    const attempt = (body: string, model: string, number: number) =>
      attemptExchange(postJson(client, url, headers, body), config.timeout, number, report, judgeAnswer(reading(model), debug))

    // The JSON of the history messages and tool specs each turn resends, written once (KeptJson).
    const requestJson = KeptJson.make()
    const bodyOf = (request: MessagesRequest & { readonly stream?: true }): string => requestJson(request) ?? JSON.stringify(request)

    const complete = (request: MessagesRequest) =>
      Effect.gen(function*() {
        const body = bodyOf(request)
        yield* debug(`POST ${url} (x-api-key: <redacted>, anthropic-version: ${API_VERSION})`)
        yield* debug(`request ${body}`)
        return yield* withRetries("Anthropic API", config.retries, (number) => attempt(body, request.model, number))
      }).pipe(Tracing.withSpan("AnthropicBrain.complete", { model: request.model }))

    const words = { silent: `no more of the answer within ${Duration.toSeconds(config.timeout)}s`, scrub }

    // The answer assembled from its events is decoded as it is: no JSON text to write and parse again.
    const decodeStreamed = (whole: unknown) =>
      config.debug
        ? Effect.tap(decodeBrainAnswerJson(whole, scrub), (response) => debug(`response ${JSON.stringify(response)}`))
        : decodeBrainAnswerJson(whole, scrub)

    /** One attempt at a streamed answer: its events, or a whole answer (a server that does not stream) as one. */
    const streamAttempt = (body: string, model: string, number: number) => {
      const judge = judgeAnswer(reading(model), debug)
      return attemptExchange(
        postForEvents(client, url, headers, body, config.timeout, words, () => assembly(decodeStreamed, scrub)),
        config.timeout,
        number,
        report,
        (answer, nowMillis, after): Effect.Effect<Stream.Stream<BrainEvent, BrainError>, AttemptFailure> => {
          const events = eventsOf(answer)
          if (events === undefined) return Effect.map(judge(answer, nowMillis, after), (response) => Stream.make(answerEvent(response)))
          return Effect.as(debug(`${after}: HTTP ${answer.status}, streaming`), events)
        }
      )
    }

    // Retried up to the answer's first byte only: text a listener was given is never sent twice.
    const stream = (request: MessagesRequest) =>
      Stream.unwrap(
        Effect.gen(function*() {
          const body = bodyOf({ ...request, stream: true })
          yield* debug(`POST ${url} (x-api-key: <redacted>, anthropic-version: ${API_VERSION})`)
          yield* debug(`request ${body}`)
          return yield* withRetries("Anthropic API", config.retries, (number) => streamAttempt(body, request.model, number))
        }).pipe(Tracing.withSpan("AnthropicBrain.stream", { model: request.model }))
      )

    return Brain.of({ complete, stream })
  })

/** The key is unset (or empty); a key that is set but unusable is reported as itself. */
const missesApiKey = (error: Config.ConfigError): boolean => isUnset(error, AnthropicApiKey.key)

export const missingApiKey = new MissingSetting({
  key: AnthropicApiKey.key,
  message:
    "ANTHROPIC_API_KEY is not set: add export ANTHROPIC_API_KEY=\"...\" to config.env (see config.env.example) or set it in the environment."
})

export const layer: Layer.Layer<Brain, Config.ConfigError | MissingSetting, HttpClient.HttpClient> = Layer.effect(
  Brain,
  AnthropicConfig.pipe(
    Effect.mapError((error) => missesApiKey(error) ? missingApiKey : error),
    Effect.flatMap(make)
  )
)
