/**
 * The length cap's field: `max_completion_tokens` for the o-series and gpt-5
 * on api.openai.com, `max_tokens` everywhere else, and a switch (kept by the
 * brain, TokenField.makeMemory) when a server refuses the field it was sent.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Redacted } from "effect"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import { toChatRequest } from "../../src/brain/ChatRequest.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import * as TokenField from "../../src/brain/TokenField.js"
import * as Server from "../support/ChatCompletionsServer.js"
import { withRealHttp } from "../support/TestClockHttp.js"
import { advanceTo, awaitPendingSleep } from "../support/TestClockWait.js"

const request = (model: string): MessagesRequest => ({ model, max_tokens: 256, messages: [{ role: "user", content: "Hello?" }] })

const settings = (baseUrl: string): OpenAi.OpenAiConfig => ({
  apiKey: Option.some(Redacted.make("sk-test")),
  baseUrl,
  timeout: Duration.seconds(60),
  retries: 4,
  debug: false
})

const capsOf = (requests: ReadonlyArray<Server.RecordedRequest>) =>
  requests.map((received) => {
    const body = received.body as Record<string, unknown>
    return "max_tokens" in body ? `max_tokens=${String(body.max_tokens)}` : `max_completion_tokens=${String(body.max_completion_tokens)}`
  })

describe("the length cap's field", () => {
  it.effect("a server refusing max_tokens (as OpenAI's gpt-5 does) gets max_completion_tokens, then always", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.refusing(["max_tokens"], Server.replies(Server.text("Hi."))))
      const brain = yield* OpenAi.make(settings(server.url))
      const answer = yield* brain.complete(request("model-refusing-max-tokens"))
      expect(answer.content).toEqual([{ type: "text", text: "Hi." }])
      // Remembered by the brain: its next requests go straight to the field it takes.
      yield* brain.complete(request("model-refusing-max-tokens"))
      yield* brain.complete(request("model-refusing-max-tokens"))
      expect(capsOf(yield* server.requests)).toEqual([
        "max_tokens=256",
        "max_completion_tokens=256",
        "max_completion_tokens=256",
        "max_completion_tokens=256"
      ])
      // Another brain (another command, another host) has learned nothing yet: it asks as a first brain does.
      yield* (yield* OpenAi.make(settings(server.url))).complete(request("model-refusing-max-tokens"))
      expect(capsOf(yield* server.requests).slice(4)).toEqual(["max_tokens=256", "max_completion_tokens=256"])
    })))

  it.effect("a server refusing max_completion_tokens is asked again with max_tokens", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.refusing(["max_completion_tokens"], Server.replies(Server.text("Old."))))
      // As if an earlier answer had told this brain its endpoint wants max_completion_tokens for it.
      const fields = TokenField.makeMemory(server.url)
      fields.learn("model-refusing-completion", "max_completion_tokens")
      const brain = yield* OpenAi.make(settings(server.url), fields)
      expect((yield* brain.complete(request("model-refusing-completion"))).content).toEqual([{ type: "text", text: "Old." }])
      yield* brain.complete(request("model-refusing-completion"))
      expect(capsOf(yield* server.requests)).toEqual(["max_completion_tokens=256", "max_tokens=256", "max_tokens=256"])
    })))

  it.effect("a local server keeps getting max_tokens, whatever the model's name", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(Server.text("Local.", "llamacpp")))
      const brain = yield* OpenAi.make({ ...settings(server.url), apiKey: Option.none() })
      for (const model of ["gpt-5-mini", "o3", "qwen3:8b"]) yield* brain.complete(request(model))
      expect(capsOf(yield* server.requests)).toEqual(["max_tokens=256", "max_tokens=256", "max_tokens=256"])
    })))

  it.effect("a transient failure after the switch is retried with the field the server takes", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.refusing(
        ["max_tokens"],
        Server.replies(Server.text("unused"), Server.apiError(503, "busy"), Server.text("Recovered."))
      ))
      const fiber = yield* Effect.forkChild((yield* OpenAi.make(settings(server.url))).complete(request("model-switch-then-503")))
      yield* server.awaitRequests(2)
      yield* awaitPendingSleep(1_000)
      yield* advanceTo(1_000)
      expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "Recovered." }])
      expect(capsOf(yield* server.requests)).toEqual(["max_tokens=256", "max_completion_tokens=256", "max_completion_tokens=256"])
    })))

  it.effect("a server refusing both fields fails for good after one try of each; a bad value is no refusal", () =>
    withRealHttp(Effect.gen(function*() {
      const both = yield* Server.make(Server.refusing(["max_tokens", "max_completion_tokens"], Server.replies(Server.text("no"))))
      const error = yield* Effect.flip((yield* OpenAi.make(settings(both.url))).complete(request("model-refusing-both")))
      expect(error.reason).toBe("fatal")
      expect(error.detail).toContain("HTTP 400: unsupported_parameter: Unsupported parameter: 'max_completion_tokens'")
      expect(capsOf(yield* both.requests)).toEqual(["max_tokens=256", "max_completion_tokens=256"])

      const tooLarge = "max_tokens is too large: 100000. This model supports at most 16384 completion tokens."
      const limited = yield* Server.make(Server.replies(Server.apiError(400, tooLarge, "openai", "invalid_value")))
      const refused = yield* Effect.flip((yield* OpenAi.make(settings(limited.url))).complete(request("model-too-large")))
      expect(refused.detail).toContain(tooLarge)
      expect(yield* limited.requests).toHaveLength(1)
    })))

  it("starts with max_completion_tokens only for the o-series and gpt-5 on api.openai.com", () => {
    const openai = "https://api.openai.com/v1"
    for (const model of ["o1", "o1-mini", "o3", "o3-mini", "o4-mini-2025-04-16", "gpt-5", "gpt-5-mini", "gpt-5.1", "ft:o4-mini:acme::x"]) {
      expect([model, TokenField.firstChoice(openai, model)]).toEqual([model, "max_completion_tokens"])
    }
    for (const model of ["gpt-4.1-mini", "gpt-4o", "gpt-3.5-turbo", "omni-moderation-latest", "gpt-50"]) {
      expect([model, TokenField.firstChoice(openai, model)]).toEqual([model, "max_tokens"])
    }
    for (const base of ["https://openrouter.ai/api/v1", "http://127.0.0.1:11434/v1", "http://localhost:8080/v1"]) {
      expect(TokenField.firstChoice(base, "gpt-5")).toBe("max_tokens")
    }
  })

  it("tells a refusal of the field from other answers", () => {
    const said = (message: string, extra: object = {}) => JSON.stringify({ error: { message, ...extra } })
    expect(TokenField.refuses(400, said("x", { param: "max_tokens", code: "unsupported_parameter" }), "max_tokens")).toBe(true)
    expect(TokenField.refuses(400, said("Unrecognized request argument supplied: max_completion_tokens"), "max_completion_tokens"))
      .toBe(true)
    expect(TokenField.refuses(400, said("Unrecognized request argument supplied: max_completion_tokens"), "max_tokens")).toBe(false)
    expect(TokenField.refuses(400, said("max_tokens: Extra inputs are not permitted"), "max_tokens")).toBe(true)
    expect(TokenField.refuses(400, said("max_tokens must be at least 1"), "max_tokens")).toBe(false)
    expect(TokenField.refuses(404, said("Unsupported parameter: 'max_tokens'"), "max_tokens")).toBe(false)
  })

  it("puts the cap in the field asked for, where max_tokens was", () => {
    const wire = JSON.stringify(toChatRequest(request("m"), "max_completion_tokens"))
    expect(wire).toBe("{\"model\":\"m\",\"max_completion_tokens\":256,\"messages\":[{\"role\":\"user\",\"content\":\"Hello?\"}]}")
    expect(JSON.stringify(toChatRequest(request("m")))).toContain("\"max_tokens\":256")
  })
})
