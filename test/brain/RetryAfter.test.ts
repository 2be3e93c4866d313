/**
 * `retry-after` counts only as RFC 9110 writes it: whole seconds or an
 * HTTP-date. Anything else is no answer, and the backoff applies: read as a
 * date, "-1" or "1 2" meant "now" and spent every retry in milliseconds.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Redacted } from "effect"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as BrainRetry from "../../src/brain/BrainRetry.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as ChatServer from "../support/ChatCompletionsServer.js"
import { withRealHttp } from "../support/TestClockHttp.js"
import { advanceTo, awaitPendingSleep } from "../support/TestClockWait.js"

const request: MessagesRequest = { model: "m", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }
const common = { timeout: Duration.seconds(60), retries: 4, debug: false }

describe("parseRetryAfter", () => {
  const now = Date.parse("2025-01-01T00:00:00Z")
  const millis = (value: string) => Option.map(BrainRetry.parseRetryAfter(value, now), Duration.toMillis)

  it("reads whole seconds and HTTP dates, caps long waits", () => {
    expect(millis("7")).toEqual(Option.some(7_000))
    expect(millis(" 0 ")).toEqual(Option.some(0))
    expect(millis("Wed, 01 Jan 2025 00:00:12 GMT")).toEqual(Option.some(12_000))
    expect(millis("Tue, 31 Dec 2024 23:59:00 GMT")).toEqual(Option.some(0))
    expect(millis("3600")).toEqual(Option.some(60_000))
    expect(BrainRetry.parseRetryAfter(undefined, now)).toEqual(Option.none())
  })

  it("ignores anything else, which Date.parse would have read as a date in the past", () => {
    const unreadable = ["soon", "-1", "1 2", "5, 10", "0.5", "1e3", "", "2025-01-01T00:00:12Z", "Wed, 01 Jan 2025",
      "Wed, 99 Jan 2025 00:00:00 GMT"]
    expect(unreadable.filter((value) => Option.isSome(millis(value)))).toEqual([])
  })
})

describe("an unreadable retry-after", () => {
  it.effect("Anthropic: a 429 with retry-after \"1 2\" waits the 1 s backoff", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(429, "rate_limit_error", "slow down", { "retry-after": "1 2" }),
        AnthropicServer.text("After the backoff.")
      ))
      const brain = yield* Anthropic.make({ ...common, apiKey: Redacted.make("test-key-not-secret"), baseUrl: server.url })
      const fiber = yield* Effect.forkChild(brain.complete(request))
      yield* server.awaitRequests(1)
      yield* awaitPendingSleep(1_000)
      expect(yield* server.requests).toHaveLength(1)
      yield* advanceTo(1_000)
      expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "After the backoff." }])
    })))

  it.effect("OpenAI-compatible: a 503 with retry-after \"-1\" waits the 1 s backoff", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* ChatServer.make(ChatServer.replies(
        ChatServer.respond(503, { error: { message: "busy" } }, { "retry-after": "-1" }),
        ChatServer.text("After the backoff.")
      ))
      const brain = yield* OpenAi.make({ ...common, apiKey: Option.none(), baseUrl: server.url })
      const fiber = yield* Effect.forkChild(brain.complete(request))
      yield* server.awaitRequests(1)
      yield* awaitPendingSleep(1_000)
      expect(yield* server.requests).toHaveLength(1)
      yield* advanceTo(1_000)
      expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "After the backoff." }])
    })))
})
