/**
 * A model the server does not serve is answered with the models it offers:
 * on a 404 about the model, both brains list the server's models (GET
 * /v1/models, with the key) and say "model X is not served here; it offers:
 * a, b, c", as the misconfigured problem the user is told and in the log's
 * detail. A server without a listing leaves the answer as before; a 404
 * about the address (no model named) lists nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option, Redacted } from "effect"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as ModelList from "../../src/brain/ModelList.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import { misconfiguredReply } from "../../src/agent/Turn.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as ChatServer from "../support/ChatCompletionsServer.js"
import type * as LoopbackHttp from "../support/LoopbackHttp.js"
import { withRealHttp } from "../support/TestClockHttp.js"

const common = { timeout: Duration.seconds(60), retries: 2, debug: false }
const ask = (model: string): MessagesRequest => ({ model, max_tokens: 16, messages: [{ role: "user", content: "Hi" }] })
const key = `test-key-${Math.random().toString(36).slice(2)}`

const failureOf = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
  Effect.flip(effect).pipe(Effect.map((error) => error as unknown as { reason: string; detail: string; misconfigured?: { problem: string; setting: string } }))

/** Answers GET …/models with `listing` and every other request with `other`. */
const routed = (listing: LoopbackHttp.Reply, other: LoopbackHttp.Reply) => (request: LoopbackHttp.RecordedRequest) =>
  request.method === "GET" && /\/models(\?|$)/.test(request.path) ? listing : other

const listing = (...ids: ReadonlyArray<string>) => ChatServer.respond(200, { object: "list", data: ids.map((id) => ({ id, object: "model" })) })

describe("a model the server does not serve", () => {
  it.effect("Anthropic: not_found_error for the model → its listing, with the key, named in the reply", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(routed(
        ChatServer.respond(200, { data: [{ id: "claude-a", type: "model" }, { id: "claude-b", type: "model" }], has_more: false }),
        AnthropicServer.apiError(404, "not_found_error", "model: claude-nope")
      ))
      const brain = yield* Anthropic.make({ ...common, apiKey: Redacted.make(key), baseUrl: server.url })
      const error = yield* failureOf(brain.complete(ask("claude-nope")))
      const said = "model claude-nope is not served here; it offers: claude-a, claude-b"
      expect(error.reason).toBe("fatal")
      expect(error.misconfigured).toEqual({ problem: said, setting: "PLANCKCLAW_MODEL" })
      expect(error.detail).toBe(`HTTP 404: not_found_error: model: claude-nope: ${said}`)
      expect(misconfiguredReply(error.misconfigured!.problem)).toContain("it offers: claude-a, claude-b")
      const requests = yield* server.requests
      expect(requests.map((request) => `${request.method} ${request.path}`)).toEqual(["POST /v1/messages", "GET /v1/models?limit=1000"])
      expect(requests[1]!.headers["x-api-key"]).toBe(key)
    })))

  for (
    const [flavor, reply] of [
      ["OpenAI (model_not_found)", ChatServer.apiError(404, "The model `gpt-nope` does not exist", "openai", "model_not_found")],
      ["Ollama", ChatServer.apiError(404, "model \"gpt-nope\" not found, try pulling it first", "ollama")]
    ] as const
  ) {
    it.effect(`OpenAI-compatible, ${flavor}: the models of GET /v1/models are said`, () =>
      withRealHttp(Effect.gen(function*() {
        const server = yield* ChatServer.make(routed(listing("qwen3:8b", "llama3.2"), reply))
        const brain = yield* OpenAi.make({ ...common, apiKey: Option.some(Redacted.make(key)), baseUrl: server.url })
        const error = yield* failureOf(brain.complete(ask("gpt-nope")))
        expect(error.misconfigured).toEqual({ problem: "model gpt-nope is not served here; it offers: qwen3:8b, llama3.2", setting: "PLANCKCLAW_MODEL" })
        const requests = yield* server.requests
        expect(requests.map((request) => `${request.method} ${request.path}`)).toEqual(["POST /v1/chat/completions", "GET /v1/models"])
        expect(requests[1]!.headers["authorization"]).toBe(`Bearer ${key}`)
      })))
  }

  it.effect("a server that lists no models leaves the answer as it was", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* ChatServer.make(routed(
        ChatServer.respond(404, "not here"),
        ChatServer.apiError(404, "The model `gpt-nope` does not exist", "openai", "model_not_found")
      ))
      const brain = yield* OpenAi.make({ ...common, apiKey: Option.none(), baseUrl: server.url })
      const error = yield* failureOf(brain.complete(ask("gpt-nope")))
      expect(error.misconfigured).toEqual({ problem: "the model or API address is unknown", setting: "PLANCKCLAW_MODEL" })
    })))

  it.effect("a 404 about the address names no model: nothing is listed", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(routed(listing("claude-a"), AnthropicServer.apiError(404, "not_found_error", "Not Found")))
      const brain = yield* Anthropic.make({ ...common, apiKey: Redacted.make(key), baseUrl: server.url })
      const error = yield* failureOf(brain.complete(ask("claude-a")))
      expect(error.misconfigured?.problem).toBe("the model or API address is unknown")
      expect((yield* server.requests).map((request) => request.method)).toEqual(["POST"])
    })))
})

describe("ModelList.notServed", () => {
  it("names a dozen models at most, each on one line, and counts the rest", () => {
    const ids = Array.from({ length: 15 }, (_, index) => `m${index}`)
    expect(ModelList.notServed("x", ids)).toBe(`model x is not served here; it offers: ${ids.slice(0, 12).join(", ")} and 3 more`)
    expect(ModelList.notServed("x", ["a\u001b[2Jb\nc"])).toBe("model x is not served here; it offers: a [2Jb c")
    expect(ModelList.notServed("x", [])).toBe("model x is not served here; it lists no models")
  })
})
