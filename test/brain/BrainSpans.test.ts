/**
 * The HTTP brains' span (`AnthropicBrain.complete`, with the model) goes to
 * an installed tracer without a stack trace, even when the call fails (a
 * stack trace costs an Error per call); see src/runtime/Tracing.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Redacted, type Tracer } from "effect"
import * as EffectTracer from "effect/Tracer"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
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
})
