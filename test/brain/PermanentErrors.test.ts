/**
 * Permanent answers (400, 401, 403, 404) against transient ones (timeouts,
 * 429, 5xx, refused connections), for both HTTP brains under the TestClock;
 * the misconfigured reply a turn gives; and how the brain FIFO carries it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Redacted } from "effect"
import { BrainError, decodeBrainAnswer, type MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import { brainErrorFrame } from "../../src/pipes/BrainFrame.js"
import { APOLOGY } from "../../src/agent/Turn.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as ChatServer from "../support/ChatCompletionsServer.js"
import { harness } from "../support/Harness.js"
import { withRealHttp } from "../support/TestClockHttp.js"
import { advanceTo } from "../support/TestClockWait.js"

const request: MessagesRequest = { model: "test-model", max_tokens: 64, messages: [{ role: "user", content: "hi" }] }

const anthropic = (baseUrl: string) =>
  Anthropic.make({ apiKey: Redacted.make("test-not-a-key"), baseUrl, timeout: Duration.seconds(10), retries: 2, debug: false })
const openai = (baseUrl: string) =>
  OpenAi.make({ apiKey: Option.some(Redacted.make("test-not-a-key")), baseUrl, timeout: Duration.seconds(10), retries: 2, debug: false })

const failureOf = <A>(fiber: Fiber.Fiber<A, BrainError>) => Effect.flip(Fiber.join(fiber))

describe("permanent answers are not retried, and say which setting to fix", () => {
  const cases = [
    [401, "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "the API key was refused"],
    [403, "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "the API key was refused"],
    [404, "PLANCKCLAW_MODEL", "PLANCKCLAW_MODEL", "the model or API address is unknown"],
    [400, "PLANCKCLAW_MODEL", "PLANCKCLAW_MODEL", "the API refused the request as invalid"]
  ] as const
  for (const [status, anthropicSetting, openaiSetting, problem] of cases) {
    it.effect(`${status}: one request, misconfigured naming the setting, on both brains`, () =>
      withRealHttp(Effect.gen(function*() {
        const a = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.apiError(status, "error", "no")))
        const aError = yield* Effect.flip((yield* anthropic(a.url)).complete(request))
        expect(aError).toMatchObject({ reason: "fatal", misconfigured: { problem, setting: anthropicSetting } })
        expect(aError.detail).toContain(anthropicSetting)
        expect(aError.detail).not.toContain("test-not-a-key")
        expect(yield* a.requests).toHaveLength(1)

        const o = yield* ChatServer.make(ChatServer.replies(ChatServer.apiError(status, "no")))
        const oError = yield* Effect.flip((yield* openai(o.url)).complete(request))
        expect(oError).toMatchObject({ reason: "fatal", misconfigured: { problem, setting: openaiSetting } })
        expect(oError.detail).toContain(openaiSetting)
        expect(oError.detail).not.toContain("test-not-a-key")
        expect(yield* o.requests).toHaveLength(1)
      })))
  }

  for (const status of [429, 500, 503]) {
    it.effect(`${status} keeps the retry schedule (1 s, 2 s) and gives up as a timeout, not misconfigured`, () =>
      withRealHttp(Effect.gen(function*() {
        const a = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.apiError(status, "api_error", "busy")))
        const fiber = yield* Effect.forkChild((yield* anthropic(a.url)).complete(request))
        yield* a.awaitRequests(1)
        yield* advanceTo(1_000)
        yield* a.awaitRequests(2)
        yield* advanceTo(3_000)
        const error = yield* failureOf(fiber)
        expect(error.reason).toBe("timeout")
        expect(error.misconfigured).toBeUndefined()
        expect(yield* a.requests).toHaveLength(3)
      })))
  }

  // A proxy's or CDN's own 5xx (Cloudflare's 520-524 before api.anthropic.com, a 501 while a local model loads).
  for (const status of [501, 505, 520, 522, 524]) {
    it.effect(`a ${status} is retried like any 5xx, then answered, on both brains`, () =>
      withRealHttp(Effect.gen(function*() {
        const page = AnthropicServer.respond(status, `<html>error code: ${status}</html>`, { "content-type": "text/html" })
        const a = yield* AnthropicServer.make(AnthropicServer.replies(page, AnthropicServer.text("Recovered.")))
        const o = yield* ChatServer.make(ChatServer.replies(page, ChatServer.text("Recovered.")))
        for (const [server, make] of [[a, anthropic], [o, openai]] as const) {
          const started = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
          const fiber = yield* Effect.forkChild((yield* make(server.url)).complete(request))
          yield* server.awaitRequests(1)
          yield* advanceTo(started + 1_000)
          expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "Recovered." }])
          expect(yield* server.requests).toHaveLength(2)
        }
      })))
  }

  it.effect("an account out of credit or quota is not retried: misconfigured, naming the key whose account to top up", () =>
    withRealHttp(Effect.gen(function*() {
      const problem = "the API account is out of credit or quota"
      const a = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.apiError(
        400,
        "invalid_request_error",
        "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
      )))
      const aError = yield* Effect.flip((yield* anthropic(a.url)).complete(request))
      expect(aError).toMatchObject({ reason: "fatal", misconfigured: { problem, setting: "ANTHROPIC_API_KEY" } })
      expect(aError.detail).toContain("credit balance is too low")
      expect(aError.detail).not.toContain("PLANCKCLAW_MODEL")
      expect(yield* a.requests).toHaveLength(1)

      const answers = [
        // OpenAI: a 429 that no wait will end.
        ChatServer.respond(429, {
          error: { message: "You exceeded your current quota, please check your plan and billing details.", type: "insufficient_quota", param: null, code: "insufficient_quota" }
        }),
        // OpenRouter: 402 Payment Required.
        ChatServer.respond(402, { error: { code: 402, message: "Insufficient credits. Add more using https://openrouter.ai/settings/credits" } })
      ]
      for (const answer of answers) {
        const o = yield* ChatServer.make(ChatServer.replies(answer))
        const oError = yield* Effect.flip((yield* openai(o.url)).complete(request))
        expect(oError).toMatchObject({ reason: "fatal", misconfigured: { problem, setting: "OPENAI_API_KEY" } })
        expect(oError.detail).not.toContain("OPENAI_BASE_URL")
        expect(oError.detail).not.toContain("test-not-a-key")
        expect(yield* o.requests).toHaveLength(1)
      }
    })))

  it.effect("a 429 about a quota per minute (Gemini's words, no insufficient_quota code) keeps the retry schedule", () =>
    withRealHttp(Effect.gen(function*() {
      const o = yield* ChatServer.make(ChatServer.replies(
        ChatServer.respond(429, [{
          error: { code: 429, message: "You exceeded your current quota, please check your plan and billing details. Please retry in 1s.", status: "RESOURCE_EXHAUSTED" }
        }]),
        ChatServer.text("Recovered.")
      ))
      const fiber = yield* Effect.forkChild((yield* openai(o.url)).complete(request))
      yield* o.awaitRequests(1)
      yield* advanceTo(1_000)
      expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "Recovered." }])
      expect(yield* o.requests).toHaveLength(2)
    })))

  it.effect("a conversation longer than the model's context window is not retried: misconfigured, naming HISTORY_KEEP", () =>
    withRealHttp(Effect.gen(function*() {
      const problem = "the conversation is longer than the model's context window"
      const a = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(400, "invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum")
      ))
      const aError = yield* Effect.flip((yield* anthropic(a.url)).complete(request))
      expect(aError).toMatchObject({ reason: "fatal", misconfigured: { problem, setting: "HISTORY_KEEP" } })
      expect(aError.detail).toContain("prompt is too long")
      expect(aError.detail).toContain("/compact")
      expect(aError.detail).not.toContain("check PLANCKCLAW_MODEL")
      expect(yield* a.requests).toHaveLength(1)

      const answers = [
        // OpenAI
        ChatServer.apiError(400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130012 tokens.", "openai", "context_length_exceeded"),
        // vLLM
        ChatServer.respond(400, { object: "error", message: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (7976 in the messages, 1024 in the completion).", type: "BadRequestError", code: 400 }),
        // llama.cpp's server
        ChatServer.respond(400, { error: { code: 400, message: "the request exceeds the available context size, try increasing it", type: "exceed_context_size_error" } })
      ]
      for (const answer of answers) {
        const o = yield* ChatServer.make(ChatServer.replies(answer))
        const oError = yield* Effect.flip((yield* openai(o.url)).complete(request))
        expect(oError).toMatchObject({ reason: "fatal", misconfigured: { problem, setting: "HISTORY_KEEP" } })
        expect(oError.detail).not.toContain("supports tool calls")
        expect(yield* o.requests).toHaveLength(1)
      }
    })))

  it.effect("a refused connection is retried and names the URL it tried, on both brains", () =>
    withRealHttp(Effect.gen(function*() {
      for (const [url, make] of [[yield* AnthropicServer.unusedUrl, anthropic], [`${yield* ChatServer.unusedUrl}/v1`, openai]] as const) {
        const started = (yield* Effect.clockWith((clock) => clock.currentTimeMillis))
        const fiber = yield* Effect.forkChild((yield* make(url)).complete(request))
        yield* advanceTo(started + 1_000)
        yield* advanceTo(started + 3_000)
        const error = yield* failureOf(fiber)
        expect(error.reason).toBe("timeout")
        expect(error.detail).toContain(`nothing is listening at ${url}: is the model server running?`)
        expect(error.misconfigured).toBeUndefined()
      }
    })))
})

describe("a turn whose brain is misconfigured", () => {
  it.effect("answers that it is misconfigured (not the apology) and stores nothing; other failures keep the apology", () =>
    Effect.gen(function*() {
      const misconfigured = { problem: "the API key was refused", setting: "ANTHROPIC_API_KEY" }
      const h = yield* harness({
        script: [
          () => Effect.fail(new BrainError({ reason: "fatal", detail: "HTTP 401", misconfigured })),
          () => Effect.fail(new BrainError({ reason: "timeout", detail: "gave up after 5 attempts" })),
          () => Effect.fail(new BrainError({ reason: "fatal", detail: "answer is not JSON" }))
        ]
      })
      expect((yield* h.say("one")).text).toBe(
        "I can't think right now: my brain is misconfigured (the API key was refused). The log says what to fix."
      )
      expect((yield* h.say("two")).text).toBe(APOLOGY)
      expect((yield* h.say("three")).text).toBe(APOLOGY)
      expect(h.read("history.jsonl") ?? "").toBe("")
    }))
})

describe("the brain FIFO wire", () => {
  it("keeps {\"error\":\"fatal\"} and adds misconfigured beside it; an older fatal answer stays a plain fatal", () =>
    Effect.gen(function*() {
      const frame = brainErrorFrame("fatal", { problem: "the API key was refused", setting: "OPENAI_API_KEY" })
      expect(frame).toBe(
        "{\"error\":\"fatal\",\"misconfigured\":{\"problem\":\"the API key was refused\",\"setting\":\"OPENAI_API_KEY\"}}\n\n"
      )
      const read = yield* Effect.flip(decodeBrainAnswer(frame.trim()))
      expect(read.reason).toBe("fatal")
      expect(read.misconfigured).toEqual({ problem: "the API key was refused", setting: "OPENAI_API_KEY" })

      const older = yield* Effect.flip(decodeBrainAnswer("{\"error\":\"fatal\"}"))
      expect(older.misconfigured).toBeUndefined()
      // A misconfigured field that is not {problem, setting} is ignored, the failure kept.
      const odd = yield* Effect.flip(decodeBrainAnswer("{\"error\":\"fatal\",\"misconfigured\":true}"))
      expect(odd).toMatchObject({ reason: "fatal" })
      expect(odd.misconfigured).toBeUndefined()
    }).pipe(Effect.runPromise))
})
