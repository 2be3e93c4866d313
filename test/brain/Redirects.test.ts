/**
 * A redirect is never followed (the key would go to the host it names): it
 * is a fatal misconfiguration of the base URL, named with where it points,
 * and not retried. Both brains, over the client a run uses (BrainHttpClient),
 * fetch and undici.
 */
import { FetchHttpClient } from "effect/http"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option, Redacted } from "effect"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as BrainHttpClient from "../../src/brain/BrainHttpClient.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as ChatServer from "../support/ChatCompletionsServer.js"
import { withPinnedJitter } from "../support/TestClockHttp.js"

const key = "sk-redirect-test-0123456789"
const request: MessagesRequest = { model: "m", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }
const common = { timeout: Duration.seconds(60), retries: 4, debug: false }
const clients = [
  ["the shipped client", BrainHttpClient.layer],
  ["fetch", FetchHttpClient.layer],
  ["undici", NodeHttpClient.layerUndici]
] as const

describe("a redirect from the API", () => {
  for (const [clientName, client] of clients) {
    for (const status of [301, 302, 307, 308]) {
      it.effect(`Anthropic, ${status} over ${clientName}: not followed, not retried, names where and ANTHROPIC_BASE_URL`, () =>
        Effect.gen(function*() {
          const elsewhere = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("I took the key.")))
          const target = `${elsewhere.url}/v1/messages`
          const api = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.respond(status, "", { location: target })))
          const brain = yield* Anthropic.make({ ...common, apiKey: Redacted.make(key), baseUrl: api.url })
          const error = yield* Effect.flip(brain.complete(request))
          expect(error.reason).toBe("fatal")
          expect(error.detail).toBe(`HTTP ${status}: the API answered with a redirect to ${target}: fix ANTHROPIC_BASE_URL`)
          expect(error.misconfigured).toEqual({ problem: "the API address redirects elsewhere", setting: "ANTHROPIC_BASE_URL" })
          expect(yield* api.requests).toHaveLength(1)
          expect(yield* elsewhere.requests).toEqual([])
        }).pipe(withPinnedJitter, Effect.provide(client)))
    }

    it.effect(`OpenAI-compatible, 307 over ${clientName} to a path of the same host: named whole, OPENAI_BASE_URL`, () =>
      Effect.gen(function*() {
        const api = yield* ChatServer.make(ChatServer.replies(
          ChatServer.respond(307, "", { location: "/elsewhere/chat/completions" }),
          ChatServer.text("Followed.")
        ))
        const brain = yield* OpenAi.make({ ...common, apiKey: Option.some(Redacted.make(key)), baseUrl: api.url })
        const error = yield* Effect.flip(brain.complete(request))
        expect(error.reason).toBe("fatal")
        expect(error.detail).toBe(
          `HTTP 307: the API answered with a redirect to http://${api.host}/elsewhere/chat/completions: fix OPENAI_BASE_URL`
        )
        expect(error.misconfigured?.setting).toBe("OPENAI_BASE_URL")
        expect(yield* api.requests).toHaveLength(1)
      }).pipe(withPinnedJitter, Effect.provide(client)))
  }
})
