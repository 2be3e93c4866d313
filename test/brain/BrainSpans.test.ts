/**
 * The HTTP brains' span (`AnthropicBrain.complete`, with the model) goes to
 * an installed tracer without a stack trace, even when the call fails (a
 * stack trace costs an Error per call); see src/runtime/Tracing.ts. Over
 * the client the brains ship with (src/brain/BrainHttpClient.ts), which
 * makes the HTTP client's own span only for a tracer that records, that
 * span is there, inside the brain's, without the key.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted, type Tracer } from "effect"
import * as EffectTracer from "effect/Tracer"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as BrainHttpClient from "../../src/brain/BrainHttpClient.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import { withRealHttp } from "../support/TestClockHttp.js"

const request: MessagesRequest = { model: "claude-test", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }

const recorder = Effect.map(Effect.tracer, (base) => {
  const spans: Array<Tracer.Span> = []
  const tracer = EffectTracer.make({
    span: (...args) => {
      const span = base.span(...args)
      spans.push(span)
      return span
    },
    context: base.context
  })
  return { tracer, spans }
})

const brainAt = (url: string) =>
  Anthropic.make({ apiKey: Redacted.make("test-key-not-secret"), baseUrl: url, timeout: Duration.seconds(60), retries: 0, debug: false })

describe("HTTP brain spans", () => {
  it.effect("a refused call's span carries the model and no stack trace", () =>
    withRealHttp(Effect.gen(function*() {
      const { spans, tracer } = yield* recorder
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.apiError(400, "invalid_request_error", "bad")))
      const brain = yield* brainAt(server.url)
      const exit = yield* Effect.exit(brain.complete(request).pipe(Effect.withTracer(tracer)))
      expect(exit._tag).toBe("Failure")
      const span = spans.find((span) => span.name === "AnthropicBrain.complete")
      expect(span === undefined ? undefined : Object.fromEntries(span.attributes)).toEqual({ model: "claude-test" })
    })))

  it.effect("over the shipped client, a recording tracer gets the HTTP exchange's span inside the brain's, without the key", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recorder
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("hi")))
      // Built in the test's scope: the client's connections close with it, not once the brain is made.
      const brain = yield* Effect.provide(brainAt(server.url), yield* Layer.build(BrainHttpClient.layer))
      const answer = yield* brain.complete(request).pipe(Effect.withTracer(tracer))
      expect(answer.content).toEqual([{ type: "text", text: "hi" }])
      const outer = spans.find((span) => span.name === "AnthropicBrain.complete")
      const exchange = spans.find((span) => span.kind === "client")
      expect(exchange?.attributes.get("http.request.method")).toBe("POST")
      expect(exchange?.parent._tag === "Some" ? exchange.parent.value.spanId : undefined).toBe(outer?.spanId)
      const said = JSON.stringify([...(exchange?.attributes ?? new Map()).entries()])
      expect(said).not.toContain("test-key-not-secret")
    }).pipe(Effect.scoped))
})
