/**
 * The HTTP client a run gives its brains (BrainHttpClient: undici, loaded at
 * the first request): the request goes out as over any client, without
 * trace headers, whole and streamed answers come back, and one client serves
 * calls that start together. (Redirects and AnswerSize run over it too.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted, Stream } from "effect"
import type { BrainEvent, MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as BrainHttpClient from "../../src/brain/BrainHttpClient.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import { withPinnedJitter } from "../support/TestClockHttp.js"

const request: MessagesRequest = { model: "m", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }

const brainAt = (url: string) =>
  Anthropic.make({ apiKey: Redacted.make("test-key-not-secret"), baseUrl: url, timeout: Duration.seconds(60), retries: 0, debug: false })

const texts = (events: ReadonlyArray<BrainEvent>) => events.flatMap((event) => event._tag === "TextDelta" ? [event.text] : [])

describe("the brains' shipped HTTP client", () => {
  it.effect("sends no trace headers, even inside a span, and answers whole and streamed", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.streamingWhenAsked(
        AnthropicServer.streamedText("Sunny ", "in Lyon."),
        AnthropicServer.text("Sunny in Lyon.")
      ))
      const brain = yield* brainAt(server.url)
      const whole = yield* brain.complete(request).pipe(Effect.withSpan("turn"))
      const streamed = yield* Stream.runCollect(brain.stream!(request)).pipe(Effect.withSpan("turn"))
      expect(whole.content).toEqual([{ type: "text", text: "Sunny in Lyon." }])
      expect(texts(streamed)).toEqual(["Sunny ", "in Lyon."])
      const sent = yield* server.requests
      expect(sent).toHaveLength(2)
      for (const received of sent) {
        expect(received.headers).not.toHaveProperty("traceparent")
        expect(received.headers).not.toHaveProperty("b3")
      }
    }).pipe(withPinnedJitter, Effect.provide(BrainHttpClient.layer)))

  it.effect("calls that start together share the one client it loads", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("Yes.")))
      const brain = yield* brainAt(server.url)
      const answers = yield* Effect.all(Array.from({ length: 4 }, () => brain.complete(request)), { concurrency: "unbounded" })
      expect(answers.map((answer) => answer.content)).toEqual(Array.from({ length: 4 }, () => [{ type: "text", text: "Yes." }]))
      expect(yield* server.requests).toHaveLength(4)
    }).pipe(withPinnedJitter, Effect.provide(Layer.fresh(BrainHttpClient.layer))))
})
