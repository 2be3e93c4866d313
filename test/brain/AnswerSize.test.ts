/**
 * An answer is read up to 32 MiB: a bigger one, or one that never ends, is a
 * fatal error saying so, not retried, and the rest is not read.
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
import { flood } from "../support/LoopbackHttp.js"
import { withPinnedJitter } from "../support/TestClockHttp.js"

const MiB = 1024 * 1024
const request: MessagesRequest = { model: "m", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }
const common = { timeout: Duration.seconds(60), retries: 4, debug: false }
const clients = [
  ["the shipped client", BrainHttpClient.layer],
  ["fetch", FetchHttpClient.layer],
  ["undici", NodeHttpClient.layerUndici]
] as const

describe("an answer larger than 32 MiB", () => {
  for (const [clientName, client] of clients) {
    it.effect(`Anthropic over ${clientName}: a streamed one is dropped past the bound, fatal, not retried`, () =>
      Effect.gen(function*() {
        const reply = flood(64 * MiB)
        const server = yield* AnthropicServer.make(AnthropicServer.replies(reply))
        const brain = yield* Anthropic.make({ ...common, apiKey: Redacted.make("test-key-not-secret"), baseUrl: server.url })
        const error = yield* Effect.flip(brain.complete(request))
        expect(error).toMatchObject({ reason: "fatal", detail: "the API's answer was larger than 32 MiB" })
        expect(yield* server.requests).toHaveLength(1)
        // Not read to the end: the client hung up (socket buffers hold a few MiB more than it read).
        expect(reply.sent.value).toBeLessThan(64 * MiB)
      }).pipe(withPinnedJitter, Effect.provide(client)))
  }

  it.effect("OpenAI-compatible: one that announces its length is refused before it is read", () =>
    Effect.gen(function*() {
      const body = "a".repeat(33 * MiB)
      const server = yield* ChatServer.make(ChatServer.replies(
        ChatServer.respond(200, body, { "content-type": "application/json", "content-length": String(body.length) })
      ))
      const brain = yield* OpenAi.make({ ...common, apiKey: Option.none(), baseUrl: server.url })
      const error = yield* Effect.flip(brain.complete(request))
      expect(error).toMatchObject({ reason: "fatal", detail: "the API's answer was larger than 32 MiB" })
      expect(yield* server.requests).toHaveLength(1)
    }).pipe(withPinnedJitter, Effect.provide(FetchHttpClient.layer)))
})
