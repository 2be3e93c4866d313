import { FetchHttpClient } from "effect/http"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Fiber, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { Brain, type BrainError, type MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import { MissingSetting } from "../../src/config/MissingSetting.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import { withPinnedJitter, withRealHttp } from "../support/TestClockHttp.js"
import { advanceTo, awaitPendingSleep, pendingSleeps } from "../support/TestClockWait.js"
import { captureConsole } from "../support/ConsoleCapture.js"

const fakeKey = "test-key-not-secret"

const request: MessagesRequest = {
  model: "claude-haiku-4-5-20251001",
  max_tokens: 1024,
  system: "You are terse.",
  messages: [
    { role: "user", content: "What's the weather in Lyon?" },
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "weather", input: { city: "Lyon" } }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "Sunny, 21°C" }] }
  ],
  tools: [{
    name: "weather",
    description: "Current weather for a city",
    input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }]
}

const settings = (baseUrl: string, overrides: Partial<Anthropic.AnthropicConfig> = {}): Anthropic.AnthropicConfig => ({
  apiKey: Redacted.make(fakeKey),
  baseUrl,
  timeout: Duration.seconds(60),
  retries: 4,
  debug: false,
  ...overrides
})

/** Starts `complete` in the background so the test can drive the clock. */
const startCompletion = (config: Anthropic.AnthropicConfig) =>
  Effect.flatMap(Anthropic.make(config), (brain) => Effect.forkChild(brain.complete(request)))

/** The BrainError a completion ends with (the test fails if it succeeds). */
const failureOf = <A>(fiber: Fiber.Fiber<A, BrainError>) => Effect.flip(Fiber.join(fiber))

describe("Anthropic brain", () => {
  it.effect("POSTs the request as compact JSON with the API headers to {base}/v1/messages", () =>
    withRealHttp(Effect.gen(function*() {
      const console = yield* captureConsole()
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("Sunny in Lyon.")))
      // A base URL with a path prefix and a trailing slash.
      const brain = yield* Anthropic.make(settings(`${server.url}/proxy/`))
      yield* brain.complete(request)

      const [received, ...others] = yield* server.requests
      expect(others).toEqual([])
      expect(received?.method).toBe("POST")
      expect(received?.path).toBe("/proxy/v1/messages")
      expect(received?.headers["x-api-key"]).toBe(fakeKey)
      expect(received?.headers["anthropic-version"]).toBe("2023-06-01")
      expect(received?.headers["content-type"]).toBe("application/json")
      expect(received?.headers).not.toHaveProperty("traceparent")
      expect(received?.headers).not.toHaveProperty("b3")
      expect(received?.rawBody).toBe(JSON.stringify(request))
      expect(received?.body).toEqual(request)
      // Debug is off: nothing printed.
      expect(yield* console).toEqual([])
    })))

  it.effect("decodes a 200 answer into a Messages response", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.respond(200, {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-haiku-4-5-20251001",
        content: [
          { type: "thinking", thinking: "…", signature: "sig" },
          { type: "text", text: "Let me check." },
          { type: "tool_use", id: "toolu_2", name: "weather", input: { city: "Paris" } }
        ],
        stop_reason: "tool_use",
        usage: { input_tokens: 12, output_tokens: 7 }
      })))
      const brain = yield* Anthropic.make(settings(server.url))
      const response = yield* brain.complete(request)
      expect(response).toEqual({
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-haiku-4-5-20251001",
        content: [
          { type: "thinking" },
          { type: "text", text: "Let me check." },
          { type: "tool_use", id: "toolu_2", name: "weather", input: { city: "Paris" } }
        ],
        stop_reason: "tool_use",
        usage: { input_tokens: 12, output_tokens: 7 }
      })
    })))

  it.effect("retries a 500 after a 1s backoff", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(500, "api_error", "Internal server error"),
        AnthropicServer.text("Recovered.")
      ))
      const fiber = yield* startCompletion(settings(server.url))
      yield* server.awaitRequests(1)
      yield* awaitPendingSleep(1_000)
      expect(yield* server.requests).toHaveLength(1)
      yield* advanceTo(1_000)
      yield* server.awaitRequests(2)
      const response = yield* Fiber.join(fiber)
      expect(response.content).toEqual([{ type: "text", text: "Recovered." }])
      expect(yield* server.requests).toHaveLength(2)
    })))

  it.effect("waits exactly the retry-after of a 429, not the backoff", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit", {
          "retry-after": "7"
        }),
        AnthropicServer.text("After the wait.")
      ))
      const fiber = yield* startCompletion(settings(server.url))
      yield* server.awaitRequests(1)
      yield* awaitPendingSleep(7_000)
      yield* TestClock.adjust("6900 millis")
      // Still asleep until 7s: the second attempt has not started.
      expect(yield* pendingSleeps).toContain(7_000)
      expect(yield* server.requests).toHaveLength(1)
      yield* TestClock.adjust("100 millis")
      yield* server.awaitRequests(2)
      const response = yield* Fiber.join(fiber)
      expect(response.content).toEqual([{ type: "text", text: "After the wait." }])
    })))

  it.effect("honours a retry-after given as an HTTP date", () =>
    withRealHttp(Effect.gen(function*() {
      // The TestClock starts at the epoch, so this date is 5 seconds away.
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(503, "api_error", "Service unavailable", {
          "retry-after": "Thu, 01 Jan 1970 00:00:05 GMT"
        }),
        AnthropicServer.text("Back.")
      ))
      const fiber = yield* startCompletion(settings(server.url))
      yield* server.awaitRequests(1)
      yield* advanceTo(5_000)
      yield* server.awaitRequests(2)
      expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "Back." }])
    })))

  it.effect("retries 529 overloaded with exponential backoff (1s, then 2s)", () =>
    withRealHttp(Effect.gen(function*() {
      const overloaded = AnthropicServer.apiError(529, "overloaded_error", "Overloaded")
      const server = yield* AnthropicServer.make(
        AnthropicServer.replies(overloaded, overloaded, AnthropicServer.text("Finally."))
      )
      const fiber = yield* startCompletion(settings(server.url))
      yield* server.awaitRequests(1)
      yield* advanceTo(1_000)
      yield* server.awaitRequests(2)
      yield* advanceTo(3_000)
      yield* server.awaitRequests(3)
      expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "Finally." }])
    })))

  it.effect("does not retry a 400 and reports the API's message as fatal", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(400, "invalid_request_error", "max_tokens: Field required"),
        AnthropicServer.text("never sent")
      ))
      const fiber = yield* startCompletion(settings(server.url))
      const error = yield* failureOf(fiber)
      expect(error.reason).toBe("fatal")
      expect(error.detail).toBe(
        "HTTP 400: invalid_request_error: max_tokens: Field required " +
          "(check PLANCKCLAW_MODEL (claude-haiku-4-5-20251001) and PLANCKCLAW_MAX_TOKENS are within the model's limits)"
      )
      expect(error.misconfigured).toEqual({ problem: "the API refused the request as invalid", setting: "PLANCKCLAW_MODEL" })
      expect(yield* server.requests).toHaveLength(1)
    })))

  it.effect("does not retry a 401, and the key never appears in the detail even when echoed", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(401, "authentication_error", `invalid x-api-key ${fakeKey}`)
      ))
      const error = yield* failureOf(yield* startCompletion(settings(server.url)))
      expect(error.reason).toBe("fatal")
      expect(error.detail).toBe(
        "HTTP 401: authentication_error: invalid x-api-key <redacted> (check ANTHROPIC_API_KEY is a valid key for this API)"
      )
      expect(error.misconfigured).toEqual({ problem: "the API key was refused", setting: "ANTHROPIC_API_KEY" })
      expect(yield* server.requests).toHaveLength(1)
    })))

  it.effect("gives up with timeout when every attempt hangs past the per-attempt timeout", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.hang))
      const fiber = yield* startCompletion(settings(server.url, { timeout: Duration.seconds(10), retries: 2 }))
      yield* server.awaitRequests(1)
      yield* advanceTo(10_000) // attempt 1 times out
      yield* advanceTo(11_000) // 1s backoff
      yield* server.awaitRequests(2)
      yield* advanceTo(21_000) // attempt 2 times out
      yield* advanceTo(23_000) // 2s backoff
      yield* server.awaitRequests(3)
      yield* advanceTo(33_000) // attempt 3 times out: retries exhausted
      const error = yield* failureOf(fiber)
      expect(error.reason).toBe("timeout")
      expect(error.detail).toBe("gave up after 3 attempts: no answer within 10s")
      expect(yield* server.requests).toHaveLength(3)
    })))

  // fetch (what a run uses) hides the system's reason under "fetch failed": it is found beneath, and the URL named.
  for (const [name, client] of [["undici", NodeHttpClient.layerUndici], ["fetch", FetchHttpClient.layer]] as const) {
    it.effect(`gives up with timeout after the retries when the connection is refused (${name}), naming the URL`, () =>
      Effect.gen(function*() {
        const url = yield* AnthropicServer.unusedUrl
        const fiber = yield* startCompletion(settings(url, { retries: 2 }))
        yield* advanceTo(1_000)
        yield* advanceTo(3_000)
        const error = yield* failureOf(fiber)
        expect(error.reason).toBe("timeout")
        expect(error.detail).toBe(`gave up after 3 attempts: nothing is listening at ${url}: is the model server running?`)
        expect(error.misconfigured).toBeUndefined()
      }).pipe(withPinnedJitter, Effect.provide(client)))
  }

  it.effect("retries when the connection drops before an answer", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.drop, AnthropicServer.text("Reconnected.")))
      const fiber = yield* startCompletion(settings(server.url))
      yield* server.awaitRequests(1)
      yield* advanceTo(1_000)
      yield* server.awaitRequests(2)
      expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "Reconnected." }])
    })))

  it.effect("with no retries, a 503 gives timeout after one attempt", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(503, "api_error", "Service unavailable")
      ))
      const error = yield* failureOf(yield* startCompletion(settings(server.url, { retries: 0 })))
      expect(error.reason).toBe("timeout")
      expect(error.detail).toBe("gave up after 1 attempt: HTTP 503: api_error: Service unavailable")
      expect(yield* server.requests).toHaveLength(1)
    })))

  it.effect("a 200 body that is not a Messages response is fatal and not retried", () =>
    withRealHttp(Effect.gen(function*() {
      const bodies = [
        { reply: AnthropicServer.respond(200, "not json{"), detail: "answer is not JSON: not json{" },
        {
          reply: AnthropicServer.respond(200, "<html><body>502 Bad Gateway</body></html>", { "content-type": "text/html" }),
          detail: "answer is not JSON: <html>"
        },
        { reply: AnthropicServer.respond(200, { content: "plain string" }), detail: "answer is not a Messages API response" }
      ]
      for (const { detail, reply } of bodies) {
        const server = yield* AnthropicServer.make(AnthropicServer.replies(reply))
        const error = yield* failureOf(yield* startCompletion(settings(server.url)))
        expect(error.reason).toBe("fatal")
        expect(error.detail).toContain(detail)
        expect(error.detail).not.toContain("\n")
        expect(yield* server.requests).toHaveLength(1)
      }
    })))

  it.effect("a reply whose usage alone is malformed is still the reply, its usage not counted", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.respond(200, {
        content: [{ type: "text", text: "Still here." }],
        stop_reason: "end_turn",
        usage: { input_tokens: "12", output_tokens: 3 }
      })))
      const answer = yield* Fiber.join(yield* startCompletion(settings(server.url)))
      expect(answer.content).toEqual([{ type: "text", text: "Still here." }])
      expect(answer.usage).toBeUndefined()
    })))

  it.effect("a 200 body with a root-level error key is a brain error, not retried", () =>
    withRealHttp(Effect.gen(function*() {
      const overloaded = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(200, "overloaded_error", "Overloaded")
      ))
      const fatal = yield* failureOf(yield* startCompletion(settings(overloaded.url)))
      expect(fatal.reason).toBe("fatal")
      expect(fatal.detail).toContain("Overloaded")
      expect(yield* overloaded.requests).toHaveLength(1)

      // The brain wire's own give-up answer keeps its reason.
      const gaveUp = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.respond(200, { error: "timeout" })))
      const timeout = yield* failureOf(yield* startCompletion(settings(gaveUp.url)))
      expect(timeout.reason).toBe("timeout")
      expect(yield* gaveUp.requests).toHaveLength(1)
    })))

  it.effect("debug mode prints the payload and each attempt's outcome with elapsed time, never the key", () =>
    withRealHttp(Effect.gen(function*() {
      const console = yield* captureConsole()
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.hang,
        AnthropicServer.apiError(529, "overloaded_error", `Overloaded (${fakeKey})`),
        AnthropicServer.text("Hi.")
      ))
      const fiber = yield* startCompletion(settings(server.url, { timeout: Duration.seconds(10), debug: true }))
      yield* server.awaitRequests(1)
      yield* advanceTo(10_000)
      yield* advanceTo(11_000)
      yield* server.awaitRequests(2)
      yield* advanceTo(13_000)
      yield* server.awaitRequests(3)
      yield* Fiber.join(fiber)

      const lines = yield* console
      expect(lines.filter((line) => line.includes("[planckclaw brain]"))).toEqual([
        `stderr: [planckclaw brain] POST ${server.url}/v1/messages (x-api-key: <redacted>, anthropic-version: 2023-06-01)`,
        `stderr: [planckclaw brain] request ${JSON.stringify(request)}`,
        "stderr: [planckclaw brain] attempt 1, 10000 ms: no answer within 10s",
        "stderr: [planckclaw brain] attempt 2, 0 ms: HTTP 529: overloaded_error: Overloaded (<redacted>)",
        "stderr: [planckclaw brain] attempt 3, 0 ms: HTTP 200",
        expect.stringMatching(/^stderr: \[planckclaw brain\] response \{"id":"msg_test".*"Hi\."/)
      ])
      expect(lines).toContain(
        "log Warn: Anthropic API attempt 2 of 5 failed: HTTP 529: overloaded_error: Overloaded (<redacted>)"
      )
      for (const line of lines) expect(line).not.toContain(fakeKey)
    })))
})

describe("Anthropic brain layer and config", () => {
  const withEnv = (env: Record<string, string>) =>
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(env))), { preserveEmptyStrings: true }))

  it.effect("reads defaults when only the key is set", () =>
    Effect.gen(function*() {
      const config = yield* Anthropic.AnthropicConfig.pipe(withEnv({ ANTHROPIC_API_KEY: fakeKey }))
      expect(Redacted.value(config.apiKey)).toBe(fakeKey)
      expect(config.baseUrl).toBe("https://api.anthropic.com")
      expect(Duration.toMillis(config.timeout)).toBe(60_000)
      expect(config.retries).toBe(4)
      expect(config.debug).toBe(false)
    }))

  it.effect("reads every setting", () =>
    Effect.gen(function*() {
      const config = yield* Anthropic.AnthropicConfig.pipe(withEnv({
        ANTHROPIC_API_KEY: fakeKey,
        ANTHROPIC_BASE_URL: "http://127.0.0.1:8080/",
        PLANCKCLAW_BRAIN_TIMEOUT: "2.5",
        PLANCKCLAW_BRAIN_RETRIES: "0",
        PLANCKCLAW_DEBUG: "true"
      }))
      expect(config.baseUrl).toBe("http://127.0.0.1:8080/")
      expect(Duration.toMillis(config.timeout)).toBe(2_500)
      expect(config.retries).toBe(0)
      expect(config.debug).toBe(true)
      for (const [value, on] of [["1", true], ["TRUE", true], ["0", false], ["false", false], ["", false]] as const) {
        const { debug } = yield* Anthropic.AnthropicConfig.pipe(withEnv({ ANTHROPIC_API_KEY: fakeKey, PLANCKCLAW_DEBUG: value }))
        expect(debug).toBe(on)
      }
    }))

  it.effect("rejects bad values with a ConfigError naming the key and what was expected", () =>
    Effect.gen(function*() {
      const cases = [
        ["ANTHROPIC_BASE_URL", "ftp://example.com", "Expected an http(s) URL"],
        ["ANTHROPIC_BASE_URL", "api.anthropic.com", "Expected an http(s) URL"],
        ["ANTHROPIC_BASE_URL", "http://user:pass-word@127.0.0.1:8080", "without credentials"],
        ["ANTHROPIC_BASE_URL", "http://127.0.0.1:8080/?key=1", "without a query or fragment"],
        ["ANTHROPIC_BASE_URL", "http://127.0.0.1:8080/#v1", "without a query or fragment"],
        ["PLANCKCLAW_BRAIN_TIMEOUT", "0", "expected a number of seconds from 0.1 to 3600"],
        ["PLANCKCLAW_BRAIN_TIMEOUT", "soon", "expected a number of seconds from 0.1 to 3600"],
        ["PLANCKCLAW_BRAIN_RETRIES", "-1", "expected an integer from 0 to 100"]
      ] as const
      for (const [key, value, expected] of cases) {
        const error = yield* Effect.flip(Anthropic.AnthropicConfig.pipe(withEnv({ ANTHROPIC_API_KEY: fakeKey, [key]: value })))
        expect(String(error)).toContain(key)
        expect(String(error)).toContain(expected)
        expect(String(error)).not.toContain("pass-word")
      }
    }))

  it.effect("the layer fails with MissingSetting naming ANTHROPIC_API_KEY when it is missing or empty", () =>
    Effect.gen(function*() {
      for (const env of [{}, { ANTHROPIC_API_KEY: "" }, { ANTHROPIC_API_KEY: "  ", PLANCKCLAW_BRAIN_RETRIES: "x" }]) {
        const error = yield* Effect.flip(buildBrainLayer(withEnv(env)))
        expect(error).toBeInstanceOf(MissingSetting)
        expect(error).toMatchObject({ key: "ANTHROPIC_API_KEY" })
        expect((error as MissingSetting).message).toContain("ANTHROPIC_API_KEY is not set")
        expect((error as MissingSetting).message).toContain("config.env")
        expect((error as MissingSetting).message).not.toContain("\n")
      }
    }))

  it.effect("the layer talks to ANTHROPIC_BASE_URL with the configured key", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("Via the layer.")))
      const response = yield* Brain.pipe(
        Effect.flatMap((brain) => brain.complete(request)),
        Effect.provide(Anthropic.layer),
        withEnv({ ANTHROPIC_API_KEY: fakeKey, ANTHROPIC_BASE_URL: `${server.url}/` })
      )
      expect(response.content).toEqual([{ type: "text", text: "Via the layer." }])
      const [received] = yield* server.requests
      expect(received?.path).toBe("/v1/messages")
      expect(received?.headers["x-api-key"]).toBe(fakeKey)
    })))
})

/** Builds the real layer (config only; the HTTP client is never used) under `configure`. */
const buildBrainLayer = (configure: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) =>
  Brain.pipe(Effect.provide(Anthropic.layer), Effect.provide(NodeHttpClient.layerUndici), configure)
