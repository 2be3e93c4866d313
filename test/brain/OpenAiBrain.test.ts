import { FetchHttpClient } from "effect/http"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, Fiber, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { Brain, type BrainError, type MessagesRequest } from "../../src/ports/Brain.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import { MissingSetting } from "../../src/config/MissingSetting.js"
import * as Server from "../support/ChatCompletionsServer.js"
import { withPinnedJitter, withRealHttp } from "../support/TestClockHttp.js"
import { advanceTo, awaitPendingSleep, letArrive } from "../support/TestClockWait.js"

const fakeKey = "sk-test-not-secret"

const request: MessagesRequest = {
  model: "gpt-test",
  max_tokens: 256,
  system: "Be brief.",
  messages: [{ role: "user", content: "Hello?" }]
}
const wireRequest = {
  model: "gpt-test",
  max_tokens: 256,
  messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hello?" }]
}

const settings = (baseUrl: string, overrides: Partial<OpenAi.OpenAiConfig> = {}): OpenAi.OpenAiConfig => ({
  apiKey: Option.some(Redacted.make(fakeKey)),
  baseUrl,
  timeout: Duration.seconds(60),
  retries: 4,
  debug: false,
  ...overrides
})

const start = (config: OpenAi.OpenAiConfig) => Effect.flatMap(OpenAi.make(config), (brain) => Effect.forkChild(brain.complete(request)))
const failureOf = <A>(fiber: Fiber.Fiber<A, BrainError>) => Effect.flip(Fiber.join(fiber))
const withEnv = (env: Record<string, string>) => Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(env))), { preserveEmptyStrings: true }))

describe("OpenAI-compatible brain over HTTP", () => {
  it.effect("POSTs the translated request to {base}/chat/completions with a Bearer key", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(Server.text("Hi.")))
      const brain = yield* OpenAi.make(settings(`${server.url}/`))
      const response = yield* brain.complete(request)
      expect(response).toEqual({
        id: "chatcmpl-test",
        type: "message",
        role: "assistant",
        model: "gpt-test",
        content: [{ type: "text", text: "Hi." }],
        stop_reason: "end_turn",
        usage: { input_tokens: 20, output_tokens: 5, cache_read_input_tokens: 10 }
      })
      const [received, ...others] = yield* server.requests
      expect(others).toEqual([])
      expect(received?.method).toBe("POST")
      expect(received?.path).toBe("/v1/chat/completions")
      expect(received?.headers["authorization"]).toBe(`Bearer ${fakeKey}`)
      expect(received?.headers["content-type"]).toBe("application/json")
      expect(received?.headers).not.toHaveProperty("traceparent")
      expect(received?.rawBody).toBe(JSON.stringify(wireRequest))
    })))

  it.effect("reads Ollama's and llama.cpp's documented answers", () =>
    withRealHttp(Effect.gen(function*() {
      for (const flavor of ["ollama", "llamacpp"] as const) {
        const server = yield* Server.make(Server.replies(
          Server.toolCalls([Server.call("call_x", "get_time", "{}")], { flavor, content: "" })
        ))
        const response = yield* (yield* OpenAi.make(settings(server.url, { apiKey: Option.none() }))).complete(request)
        expect(response.content).toEqual([{ type: "tool_use", id: "call_x", name: "get_time", input: {} }])
        expect(response.stop_reason).toBe("tool_use")
        const [received] = yield* server.requests
        expect(received?.headers).not.toHaveProperty("authorization")
      }
    })))

  const permanent = [
    [401, "openai", "invalid_api_key", `Incorrect API key provided: ${fakeKey}`,
      "HTTP 401: invalid_api_key: Incorrect API key provided: <redacted> " +
      "(the server refused OPENAI_API_KEY: check it is a valid key for HOST)"],
    [403, "openai", null, "Project does not have access", "HTTP 403: Project does not have access " +
      "(the server refused OPENAI_API_KEY: check it is a valid key for HOST)"],
    [404, "openai", "model_not_found", "The model `gpt-test` does not exist",
      "HTTP 404: model_not_found: The model `gpt-test` does not exist " +
      "(unknown model or endpoint: check PLANCKCLAW_MODEL (gpt-test) is served at http://HOST/v1/chat/completions (OPENAI_BASE_URL))"],
    [404, "ollama", null, "model \"gpt-test\" not found, try pulling it first",
      "HTTP 404: model \"gpt-test\" not found, try pulling it first " +
      "(unknown model or endpoint: check PLANCKCLAW_MODEL (gpt-test) is served at http://HOST/v1/chat/completions (OPENAI_BASE_URL))"],
    [400, "llamacpp", null, "tools param requires --jinja flag",
      "HTTP 400: tools param requires --jinja flag (the server rejected the request as invalid: " +
      "check PLANCKCLAW_MODEL (gpt-test) supports tool calls and PLANCKCLAW_MAX_TOKENS is within its limits)"]
  ] as const
  for (const [status, flavor, code, message, detail] of permanent) {
    it.effect(`${status} (${flavor}) is permanent: fatal at once, saying what to fix, never the key`, () =>
      withRealHttp(Effect.gen(function*() {
        const server = yield* Server.make(Server.replies(Server.apiError(status, message, flavor, code), Server.text("no")))
        const error = yield* failureOf(yield* start(settings(server.url)))
        expect(error.reason).toBe("fatal")
        expect(error.detail).toBe(detail.replaceAll("HOST", server.host))
        expect(error.misconfigured?.setting).toBe(status === 401 || status === 403 ? "OPENAI_API_KEY" : "PLANCKCLAW_MODEL")
        // Never retried; a 404 about the model also asks for the models list (here none: ModelList).
        expect((yield* server.requests).map((request) => request.method)).toEqual(status === 404 ? ["POST", "GET"] : ["POST"])
      })))
  }

  it.effect("without PLANCKCLAW_MODEL the layer refuses to start, naming it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Brain.pipe(
          Effect.provide(OpenAi.layer),
          Effect.provide(NodeHttpClient.layerUndici),
          withEnv({ OPENAI_BASE_URL: "http://127.0.0.1:9/v1" })
        )
      )
      expect(error).toMatchObject({ _tag: "MissingSetting", key: "PLANCKCLAW_MODEL" })
    }))

  it.effect("a 401 without a key asks for OPENAI_API_KEY", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(Server.apiError(401, "Unauthorized")))
      const error = yield* failureOf(yield* start(settings(server.url, { apiKey: Option.none() })))
      expect(error.detail).toBe(`HTTP 401: Unauthorized (${server.host} wants a key: set OPENAI_API_KEY)`)
    })))

  for (const status of [429, 500, 502, 503, 504]) {
    it.effect(`${status} is transient: retried after the backoff, then answered`, () =>
      withRealHttp(Effect.gen(function*() {
        const server = yield* Server.make(Server.replies(Server.apiError(status, "busy"), Server.text("Recovered.")))
        const fiber = yield* start(settings(server.url))
        yield* server.awaitRequests(1)
        yield* awaitPendingSleep(1_000)
        expect(yield* server.requests).toHaveLength(1)
        yield* advanceTo(1_000)
        expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "Recovered." }])
        expect(yield* server.requests).toHaveLength(2)
      })))
  }

  it.effect("a 429 waits its retry-after; retries exhausted give timeout", () =>
    withRealHttp(Effect.gen(function*() {
      const limited = Server.respond(429, { error: { message: "Rate limit reached" } }, { "retry-after": "7" })
      const server = yield* Server.make(Server.replies(limited))
      const fiber = yield* start(settings(server.url, { retries: 1 }))
      yield* advanceTo(7_000)
      yield* server.awaitRequests(2)
      const error = yield* failureOf(fiber)
      expect(error.reason).toBe("timeout")
      expect(error.detail).toBe("gave up after 2 attempts: HTTP 429: Rate limit reached")
    })))

  it.effect("a hang times out per attempt, a drop is retried, then the answer comes", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(Server.hang, Server.drop, Server.delay(20, Server.text("Late."))))
      const fiber = yield* start(settings(server.url, { timeout: Duration.seconds(10) }))
      yield* server.awaitRequests(1)
      yield* advanceTo(10_000) // attempt 1 times out
      yield* advanceTo(11_000) // 1s backoff
      yield* server.awaitRequests(2)
      yield* advanceTo(13_000) // the drop, then a 2s backoff
      expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "Late." }])
      expect(yield* server.requests).toHaveLength(3)
    })))

  it.effect("a whole answer whose body only trickles keep-alive whitespace ends at the timeout, not later", () =>
    withRealHttp(Effect.gen(function*() {
      const threeSeconds = yield* Deferred.make<void>()
      // JSON may begin with whitespace: some servers send it to keep a slow answer's connection open.
      const server = yield* Server.make(Server.replies(Server.events([" \n", threeSeconds, " \n"], "hang")))
      const fiber = yield* start(settings(server.url, { timeout: Duration.seconds(5), retries: 0 }))
      yield* server.awaitRequests(1)
      yield* awaitPendingSleep(5_000)
      yield* TestClock.adjust(Duration.seconds(3))
      yield* Deferred.succeed(threeSeconds, undefined)
      yield* letArrive
      // The whole exchange is bounded, not each read of its body.
      yield* advanceTo(5_000)
      const error = yield* failureOf(fiber)
      expect(error).toMatchObject({ reason: "timeout", detail: `gave up after 1 attempt: no answer from ${server.host} within 5s` })
      yield* server.hungUp(0)
    })))

  it.effect("every attempt hanging gives timeout naming the host", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(Server.hang))
      const fiber = yield* start(settings(server.url, { timeout: Duration.seconds(5), retries: 0 }))
      yield* advanceTo(5_000)
      const error = yield* failureOf(fiber)
      expect(error).toMatchObject({ reason: "timeout", detail: `gave up after 1 attempt: no answer from ${server.host} within 5s` })
    })))

  for (const [name, client] of [["undici", NodeHttpClient.layerUndici], ["fetch", FetchHttpClient.layer]] as const) {
    it.effect(`a refused connection (${name}) is retried, then names the URL it tried`, () =>
      Effect.gen(function*() {
        const url = `${yield* Server.unusedUrl}/v1`
        const fiber = yield* start(settings(url, { retries: 1 }))
        yield* advanceTo(1_000)
        const error = yield* failureOf(fiber)
        expect(error.reason).toBe("timeout")
        expect(error.detail).toBe(`gave up after 2 attempts: nothing is listening at ${url}: is the model server running?`)
      }).pipe(withPinnedJitter, Effect.provide(client)))
  }

  it.effect("a local server's one-character placeholder key leaves the host in the detail whole", () =>
    Effect.gen(function*() {
      const url = `${yield* Server.unusedUrl}/v1`
      const fiber = yield* start(settings(url, { retries: 0, apiKey: Option.some(Redacted.make("1")) }))
      const error = yield* failureOf(fiber)
      expect(error.detail).toContain(`nothing is listening at ${url}: `)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("a 200 body that is not a Chat Completions answer is fatal", () =>
    withRealHttp(Effect.gen(function*() {
      const cases = [
        [Server.respond(200, "<html>proxy</html>"), "answer is not JSON: <html>proxy</html>"],
        [Server.respond(200, { error: { message: "Provider returned error", code: 502 } }), "server answered error: Provider returned error"],
        [Server.respond(200, { choices: [] }), "answer has no choices"],
        // One line, saying where: no multi-line schema dump in the log.
        [Server.respond(200, { choices: "none" }), "answer is not a Chat Completions response: choices: Expected "]
      ] as const
      for (const [reply, detail] of cases) {
        const server = yield* Server.make(Server.replies(reply))
        const error = yield* failureOf(yield* start(settings(server.url)))
        expect(error.reason).toBe("fatal")
        expect(error.detail.startsWith(detail)).toBe(true)
        expect(error.detail).not.toContain("\n")
      }
    })))

  it.effect("a reply whose usage alone is malformed is still the reply, its usage not counted", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(Server.respond(200, {
        choices: [{ message: { role: "assistant", content: "Still here." }, finish_reason: "stop" }],
        usage: { prompt_tokens: "12", completion_tokens: 3 }
      })))
      const answer = yield* Fiber.join(yield* start(settings(server.url)))
      expect(answer.content).toEqual([{ type: "text", text: "Still here." }])
      expect(answer.usage).toBeUndefined()
    })))
})

describe("OpenAI-compatible brain config", () => {
  /** Builds the real layer under `env` and asks it once (the HTTP client lives only as long as the layer). */
  const askThroughLayer = (env: Record<string, string>) =>
    Brain.pipe(
      Effect.flatMap((brain) => brain.complete(request)),
      Effect.provide(OpenAi.layer),
      Effect.provide(NodeHttpClient.layerUndici),
      // The agent's default model is a Claude one: this brain wants its own.
      withEnv({ PLANCKCLAW_MODEL: "gpt-test", ...env })
    )

  it.effect("needs no key on loopback: the layer talks to OPENAI_BASE_URL without authorization", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(Server.text("Local.", "ollama")))
      for (const env of [{ OPENAI_BASE_URL: server.url }, { OPENAI_BASE_URL: server.url, OPENAI_API_KEY: " " }]) {
        expect((yield* askThroughLayer(env)).content).toEqual([{ type: "text", text: "Local." }])
      }
      for (const received of yield* server.requests) expect(received.headers).not.toHaveProperty("authorization")
    })))

  it.effect("a public base URL without a key fails at start, naming OPENAI_API_KEY", () =>
    Effect.gen(function*() {
      for (const env of [{}, { OPENAI_BASE_URL: "https://openrouter.ai/api/v1", OPENAI_API_KEY: "" }]) {
        const error = yield* Effect.flip(askThroughLayer(env))
        expect(error).toBeInstanceOf(MissingSetting)
        expect(error).toMatchObject({ key: "OPENAI_API_KEY" })
        expect((error as MissingSetting).message).toMatch(/^OPENAI_API_KEY is not set: https:\/\/(api\.openai\.com|openrouter\.ai\/api)\/v1 is not/)
      }
      const config = yield* OpenAi.OpenAiConfig.pipe(withEnv({}))
      expect(config.baseUrl).toBe("https://api.openai.com/v1")
      expect(Duration.toMillis(config.timeout)).toBe(60_000)
      expect(config.retries).toBe(4)
      const bad = yield* Effect.flip(OpenAi.OpenAiConfig.pipe(withEnv({ OPENAI_BASE_URL: "localhost:11434" })))
      expect(String(bad)).toContain("OPENAI_BASE_URL")
    }))

  it("tells loopback and private hosts from public ones", () => {
    const local = ["127.0.0.1", "127.8.9.10", "localhost", "LOCALHOST", "api.localhost", "[::1]", "10.0.0.7", "172.16.0.1",
      "172.31.255.255", "192.168.1.20", "[fd12:3456::1]", "[fc00::1]"]
    const remote = ["api.openai.com", "openrouter.ai", "172.15.0.1", "172.32.0.1", "192.169.0.1", "11.0.0.1", "[fe80::1]",
      "[2001:db8::1]", "8.8.8.8", "ollama"]
    expect(local.filter((host) => !OpenAi.isLocalHost(host))).toEqual([])
    expect(remote.filter(OpenAi.isLocalHost)).toEqual([])
  })
})
