/**
 * `"error": null` beside a good answer (some servers and proxies send it)
 * is no failure: only an error that is there counts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option, Redacted } from "effect"
import { decodeBrainAnswer, type MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as ChatServer from "../support/ChatCompletionsServer.js"
import { withRealHttp } from "../support/TestClockHttp.js"

const request: MessagesRequest = { model: "m", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }
const common = { timeout: Duration.seconds(60), retries: 0, debug: false }

describe("an answer with \"error\": null", () => {
  it.effect("Anthropic: is the answer", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.respond(200, {
        type: "message",
        error: null,
        content: [{ type: "text", text: "hello there" }],
        stop_reason: "end_turn"
      })))
      const brain = yield* Anthropic.make({ ...common, apiKey: Redacted.make("test-key-not-secret"), baseUrl: server.url })
      expect((yield* brain.complete(request)).content).toEqual([{ type: "text", text: "hello there" }])
    })))

  it.effect("OpenAI-compatible: is the answer", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* ChatServer.make(ChatServer.replies(ChatServer.respond(200, {
        id: "x",
        error: null,
        choices: [{ message: { role: "assistant", content: "hello there" }, finish_reason: "stop" }]
      })))
      const brain = yield* OpenAi.make({ ...common, apiKey: Option.none(), baseUrl: server.url })
      expect((yield* brain.complete(request)).content).toEqual([{ type: "text", text: "hello there" }])
    })))

  it.effect("on the brain wire: is the answer, while an error that is there still fails", () =>
    Effect.gen(function*() {
      const answer = yield* decodeBrainAnswer(JSON.stringify({ error: null, content: [{ type: "text", text: "hi" }] }))
      expect(answer.content).toEqual([{ type: "text", text: "hi" }])
      for (const [error, reason] of [["timeout", "timeout"], ["fatal", "fatal"], [false, "fatal"], [0, "fatal"]] as const) {
        const failed = yield* Effect.flip(decodeBrainAnswer(JSON.stringify({ error, content: [] })))
        expect([error, failed.reason]).toEqual([error, reason])
      }
    }))
})
