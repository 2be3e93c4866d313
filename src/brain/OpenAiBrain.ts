/**
 * The Brain over an OpenAI-compatible Chat Completions API (OpenAI,
 * OpenRouter, Ollama, llama.cpp's server, vLLM, LM Studio): one
 * `POST {OPENAI_BASE_URL}/chat/completions` per request, translated by
 * ChatRequest and ChatResponse, with the HTTP brains' shared timeout and
 * retries (BrainRetry).
 * Permanent answers (400, 401, 403, 404, …) fail at once with
 * `BrainError("fatal")` and a detail naming the setting to fix. `stream`
 * asks for the answer as it is written (ChatStream, SseResponse); a server
 * that answers whole anyway is read as one answer.
 */
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import {
  answerEvent,
  answersError,
  Brain,
  BrainError,
  type BrainEvent,
  type BrainService,
  type MessagesRequest,
  type MessagesResponse,
  decodeSparingUsage,
  type Misconfigured,
  oneLine,
  preview
} from "../ports/Brain.js"
import type { MissingSetting } from "../config/MissingSetting.js"
import * as Secrets from "../config/Secrets.js"
import * as KeptJson from "../runtime/KeptJson.js"
import {
  type AnswerReading,
  type AttemptFailure,
  attemptExchange,
  judgeAnswer,
  withRetries
} from "./BrainRetry.js"
import { openAiMessage } from "./FailedAnswers.js"
import * as ModelList from "./ModelList.js"
import { type HttpAnswer, postJson } from "./PostJson.js"
import { assembly, refusesStreamOptions, streamingRequest } from "./ChatStream.js"
import { eventsOf, postForEvents } from "./SseResponse.js"
import { type ChatRequest, chatConversions, toChatRequest } from "./ChatRequest.js"
import { decodeChatResponse, fromChatResponse } from "./ChatResponse.js"
import * as TokenField from "./TokenField.js"
import * as Tracing from "../runtime/Tracing.js"
import { Model, OpenAiApiKey, OpenAiBaseUrl } from "../config/settings/Brain.js"
import { missingModel, ModelConfig, OpenAiConfig, requireKey, shown } from "./OpenAiSettings.js"

// The settings live in OpenAiSettings; this module's callers keep reading them here.
export {
  DEFAULT_BASE_URL,
  isLocalHost,
  missingApiKey,
  missingModel,
  ModelConfig,
  OpenAiConfig,
  requireKey
} from "./OpenAiSettings.js"

export const make = (
  config: OpenAiConfig,
  /** What this brain learned of the length cap's field, by model (a test may hand it one that learned already). */
  fields: TokenField.FieldMemory = TokenField.makeMemory(config.baseUrl)
): Effect.Effect<BrainService, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const base = new URL(config.baseUrl)
    const url = `${config.baseUrl.replace(/\/+$/, "")}/chat/completions`
    const endpoint = `${shown(base)}/chat/completions`
    const apiKey = Option.map(config.apiKey, Redacted.value)
    const scrub = (text: string): string => Secrets.scrub(text, Option.getOrUndefined(apiKey))
    const debug = (line: string): Effect.Effect<void> =>
      config.debug ? Console.error(`[planckclaw brain] ${scrub(line)}`) : Effect.void
    const responses = yield* Ref.make(0)

    /** What to fix for a status the server will not change its mind about. */
    const advice = (status: number, model: string): string => {
      switch (status) {
        case 401:
        case 403:
          return Option.isSome(apiKey)
            ? `the server refused OPENAI_API_KEY: check it is a valid key for ${base.host}`
            : `${base.host} wants a key: set OPENAI_API_KEY`
        case 404:
          return `unknown model or endpoint: check PLANCKCLAW_MODEL (${model}) is served at ${endpoint} (OPENAI_BASE_URL)`
        case 400:
        case 422:
          return `the server rejected the request as invalid: check PLANCKCLAW_MODEL (${model}) supports tool calls ` +
            "and PLANCKCLAW_MAX_TOKENS is within its limits"
        default:
          return `check OPENAI_BASE_URL (${shown(base)}) points at a Chat Completions API`
      }
    }

    /** What the user is told, and the key to fix, for the statuses a setting causes. */
    const misconfigured = (status: number): Misconfigured | undefined => {
      switch (status) {
        case 401:
        case 403:
          return Option.isSome(apiKey)
            ? { problem: "the API key was refused", setting: OpenAiApiKey.key }
            : { problem: "the server wants an API key", setting: OpenAiApiKey.key }
        case 404:
          return { problem: "the model or API address is unknown", setting: Model.key }
        case 400:
        case 422:
          return { problem: "the API refused the request as invalid", setting: Model.key }
        default:
          return undefined
      }
    }

    const headers: Record<string, string> = Option.match(apiKey, {
      onNone: () => ({}),
      onSome: (key) => ({ authorization: `Bearer ${key}` })
    })

    const fatal = (detail: string) => Effect.fail(new BrainError({ reason: "fatal", detail: scrub(detail) }))

    const decode = (answer: string): Effect.Effect<MessagesResponse, BrainError> => {
      const json = Result.try(() => JSON.parse(answer) as unknown)
      if (Result.isFailure(json)) return fatal(`answer is not JSON: ${preview(scrub(answer))}`)
      return decodeJson(json.success, answer)
    }

    /** An answer already parsed (`text`: its JSON, written again only when an error must quote it). */
    const decodeJson = (json: unknown, text?: string): Effect.Effect<MessagesResponse, BrainError> => {
      if (answersError(json)) {
        return fatal(`server answered error: ${openAiMessage(text ?? JSON.stringify(json), scrub)}`)
      }
      const decoded = decodeSparingUsage(decodeChatResponse, json, scrub)
      if (Result.isFailure(decoded)) return fatal(`answer is not a Chat Completions response: ${oneLine(decoded.failure, scrub)}`)
      const { answer: chat, warning } = decoded.success
      return Effect.andThen(warning, Ref.updateAndGet(responses, (n) => n + 1)).pipe(Effect.flatMap((number) => {
        const translated = fromChatResponse(chat, (index) => `call_planckclaw_${number}_${index}`)
        return Result.isSuccess(translated) ? Effect.succeed(translated.success) : fatal(translated.failure)
      }))
    }

    const report = {
      noAnswer: `no answer from ${base.host} within ${Duration.toSeconds(config.timeout)}s`,
      unreachable: (reason: string) => `cannot reach ${base.host}: ${reason}`,
      scrub,
      debug,
      address: { baseUrl: config.baseUrl, setting: OpenAiBaseUrl.key }
    }

    const reading = (model: string): AnswerReading<MessagesResponse> => ({
      decode,
      said: (body) => openAiMessage(body, scrub),
      baseUrlSetting: OpenAiBaseUrl.key,
      keySetting: OpenAiApiKey.key,
      scrub,
      // Built when a 404 asks for it, not for every call.
      models: {
        model,
        offered: Effect.suspend(() => ModelList.fetchIds(client, `${config.baseUrl.replace(/\/+$/, "")}/models`, headers, config.timeout))
      },
      permanent: (status) => {
        const wrong = misconfigured(status)
        return { fix: advice(status, model), ...(wrong === undefined ? {} : { misconfigured: wrong }) }
      }
    })

    // Each history message and tool spec converted once (ChatConversions), its JSON written once (KeptJson).
    const conversions = chatConversions()
    const requestJson = KeptJson.make()
    const chatBody = (request: ChatRequest): string => requestJson(request) ?? JSON.stringify(request)

    /** How one kind of call goes on the wire: its post, its body, what it makes of an answer. */
    interface Way<A, R = never> {
      readonly post: (body: string) => Effect.Effect<HttpAnswer, HttpClientError.HttpClientError | BrainError, R>
      readonly bodyOf: (request: MessagesRequest, field: TokenField.TokenField) => string
      /**
       * Whether `answer` refuses a field this way adds that the answer can do without; if so, the way
       * leaves it out from then on, and says which field it was.
       */
      readonly dropsRefused?: (answer: HttpAnswer) => string | undefined
      readonly answered: (
        judge: ReturnType<typeof judgeAnswer<MessagesResponse>>
      ) => (answer: HttpAnswer, nowMillis: number, after: string) => Effect.Effect<A, AttemptFailure>
    }

    const whole: Way<MessagesResponse> = {
      post: (body) => postJson(client, url, headers, body),
      bodyOf: (request, field) => chatBody(toChatRequest(request, field, conversions)),
      answered: (judge) => judge
    }

    // The answer assembled from its chunks is decoded as it is: no JSON text to write and parse again.
    const decodeStreamed = (whole: unknown) =>
      Effect.map(
        config.debug ? Effect.tap(decodeJson(whole), (response) => debug(`response ${JSON.stringify(response)}`)) : decodeJson(whole),
        answerEvent
      )

    const words = { silent: `no more of the answer from ${base.host} within ${Duration.toSeconds(config.timeout)}s`, scrub }
    // Until the server refuses `stream_options` (Azure AI Foundry does): the usage is then not counted, the answer kept.
    let asksStreamUsage = true
    // Its request lives in the stream's scope (SseResponse.postForEvents).
    const streamed: Way<Stream.Stream<BrainEvent, BrainError>, Scope.Scope> = {
      post: (body) =>
        postForEvents(client, url, headers, body, config.timeout, words, () => assembly(decodeStreamed, scrub)),
      bodyOf: (request, field) => chatBody(streamingRequest(toChatRequest(request, field, conversions), asksStreamUsage)),
      // Whatever the flag said when the request left: requests made at once are each asked again.
      dropsRefused: (answer) => {
        if (!refusesStreamOptions(answer.status, answer.body)) return undefined
        asksStreamUsage = false
        return "stream_options"
      },
      answered: (judge) => (answer, nowMillis, after) => {
        const events = eventsOf(answer)
        if (events === undefined) return Effect.map(judge(answer, nowMillis, after), (response) => Stream.make(answerEvent(response)))
        return Effect.as(debug(`${after}: HTTP ${answer.status}, streaming`), events)
      }
    }

    /**
     * One attempt with the length cap in the field this server takes; when
     * it refuses that field, the same attempt asks once more with the other,
     * and the server's choice is kept by this brain (TokenField.makeMemory).
     * A field the way can do without (`dropsRefused`) is left out the same way.
     */
    const attempt = <A, R>(way: Way<A, R>, request: MessagesRequest, number: number) =>
      Effect.suspend(() => {
        const { model } = request
        const answered = way.answered(judgeAnswer(reading(model), debug))
        type Then = (answer: HttpAnswer, nowMillis: number, after: string) => Effect.Effect<A, AttemptFailure, R>
        const exchange = (body: string, then: Then): Effect.Effect<A, AttemptFailure, R> =>
          attemptExchange(way.post(body), config.timeout, number, report, then)
        const askAgain = (after: string, why: string, body: string, then: Then) =>
          debug(`${after}: ${why}`).pipe(Effect.andThen(debug(`request ${body}`)), Effect.andThen(exchange(body, then)))
        // Each refusal is answered once per attempt: the field, then what the way can do without, in either order.
        const judged = (field: TokenField.TokenField, fieldAsked: boolean, dropAsked: boolean): Then => (answer, nowMillis, after) => {
          const dropped = dropAsked ? undefined : way.dropsRefused?.(answer)
          if (dropped !== undefined) {
            return askAgain(
              after,
              `HTTP ${answer.status}: the server refuses ${dropped}: asking again without it`,
              way.bodyOf(request, field),
              judged(field, fieldAsked, true)
            )
          }
          if (fieldAsked || !TokenField.refuses(answer.status, answer.body, field)) return answered(answer, nowMillis, after)
          const other = TokenField.otherField(field)
          fields.learn(model, other)
          return askAgain(
            after,
            `HTTP ${answer.status}: the server refuses ${field}: asking again with ${other}`,
            way.bodyOf(request, other),
            judged(other, true, dropAsked)
          )
        }
        const field = fields.fieldFor(model)
        return exchange(way.bodyOf(request, field), judged(field, false, false))
      })

    const call = <A, R>(way: Way<A, R>, request: MessagesRequest) =>
      Effect.gen(function*() {
        yield* debug(`POST ${endpoint} (authorization: ${Option.isSome(apiKey) ? "Bearer <redacted>" : "none"})`)
        // Only when debugging: the body is a turn's worth of JSON, made again by the attempt.
        if (config.debug) yield* debug(`request ${way.bodyOf(request, fields.fieldFor(request.model))}`)
        return yield* withRetries("OpenAI-compatible API", config.retries, (number) => attempt(way, request, number))
      })

    const complete = (request: MessagesRequest) =>
      call(whole, request).pipe(Tracing.withSpan("OpenAiBrain.complete", { model: request.model }))

    // Retried up to the answer's first byte only: text a listener was given is never sent twice.
    const stream = (request: MessagesRequest) =>
      Stream.unwrap(call(streamed, request).pipe(Tracing.withSpan("OpenAiBrain.stream", { model: request.model })))

    return Brain.of({ complete, stream })
  })

export const layer: Layer.Layer<Brain, Config.ConfigError | MissingSetting, HttpClient.HttpClient> = Layer.effect(
  Brain,
  ModelConfig.pipe(
    Effect.flatMap((model): Effect.Effect<OpenAiConfig, Config.ConfigError | MissingSetting> =>
      Option.isNone(model) ? Effect.fail(missingModel) : OpenAiConfig
    ),
    Effect.flatMap(requireKey),
    Effect.flatMap(make)
  )
)
