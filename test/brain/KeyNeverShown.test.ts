/**
 * Whatever an API echoes, no piece of the key reaches a detail, a debug
 * line or a log line. Error texts are cut to an excerpt: each case is asked
 * with every length of text before the key, so the key straddles the cut.
 */
import { FetchHttpClient } from "effect/http"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Result, Option, Redacted } from "effect"
import { Brain, type BrainError, type MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as ChatServer from "../support/ChatCompletionsServer.js"
import { captureConsole } from "../support/ConsoleCapture.js"
import type { Reply } from "../support/LoopbackHttp.js"
import { withRealHttp } from "../support/TestClockHttp.js"

const key = "sk-live-0123456789abcdefghijKLMN"
const request: MessagesRequest = { model: "m", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }

/**
 * Lengths of text before the key: across the 200 and 300 character cuts,
 * whatever the text's prefix, in steps short enough for 8 characters of the
 * key to fall before a cut.
 */
const pads = Array.from({ length: 110 }, (_, index) => index * 3)

/** Every 8-character piece of the key `text` holds. */
const piecesIn = (text: string): Array<string> => {
  const found: Array<string> = []
  for (let at = 0; at + 8 <= key.length; at++) if (text.includes(key.slice(at, at + 8))) found.push(key.slice(at, at + 8))
  return found
}

/** `said(pad)` is the text the server puts the key in, after `pad` characters of its own. */
const withKey = (pad: number) => `${"x".repeat(pad)} your key ${key} is wrong`

type Case = readonly [name: string, reply: (pad: number) => Reply]

const anthropicCases: ReadonlyArray<Case> = [
  ["a 401's message", (pad) => AnthropicServer.apiError(401, "authentication_error", withKey(pad))],
  ["a retried 529's message (warning line)", (pad) => AnthropicServer.apiError(529, "overloaded_error", withKey(pad))],
  ["a 200 that is not JSON", (pad) => AnthropicServer.respond(200, withKey(pad))],
  ["a 200 with a root-level error", (pad) => AnthropicServer.respond(200, { error: withKey(pad) })],
  // The schema's message before the value it quotes is long: the key starts just short of the cut.
  ["a 200 that is not a Messages response", () => AnthropicServer.respond(200, { content: key })],
  ["a 200 whose usage alone is malformed (warning line)", (pad) =>
    AnthropicServer.respond(200, { content: [], usage: { input_tokens: withKey(pad) } })]
]

const chatCases: ReadonlyArray<Case> = [
  ["a 401's message", (pad) => ChatServer.apiError(401, withKey(pad))],
  ["a retried 503's message (warning line)", (pad) => ChatServer.apiError(503, withKey(pad))],
  ["a 200 that is not JSON", (pad) => ChatServer.respond(200, withKey(pad))],
  ["a 200 with an error", (pad) => ChatServer.respond(200, { error: { message: withKey(pad) } })],
  ["a 200 that is not a Chat Completions response", (pad) =>
    ChatServer.respond(200, { choices: [{ message: {}, finish_reason: [withKey(pad)] }] })],
  ["a 200 whose usage alone is malformed (warning line)", (pad) =>
    ChatServer.respond(200, {
      choices: [{ message: { content: "Hi." }, finish_reason: "stop" }],
      usage: { prompt_tokens: withKey(pad) }
    })]
]

/** Asks once per pad; then no detail, debug or log line holds a piece of the key, though one was in view. */
const expectNoPiece = (ask: Effect.Effect<unknown, BrainError>, console: Effect.Effect<ReadonlyArray<string>>) =>
  Effect.gen(function*() {
    const details: Array<string> = []
    for (const _ of pads) {
      const outcome = yield* Effect.result(ask)
      if (Result.isFailure(outcome)) details.push(outcome.failure.detail)
    }
    const lines = [...details, ...(yield* console)]
    // The key was in view: its placeholder shows (perhaps cut itself).
    expect(lines.filter((line) => line.includes("<redac")).length).toBeGreaterThan(0)
    expect(lines.filter((line) => piecesIn(line).length > 0)).toEqual([])
  })

const common = { timeout: Duration.seconds(60), retries: 0, debug: true }

describe("the key never shows, even cut", () => {
  for (const [name, reply] of anthropicCases) {
    it.effect(`Anthropic: ${name}`, () =>
      withRealHttp(Effect.gen(function*() {
        const console = yield* captureConsole()
        const server = yield* AnthropicServer.make((_, index) => reply(pads[index] ?? 0))
        const brain = yield* Anthropic.make({ ...common, apiKey: Redacted.make(key), baseUrl: server.url })
        yield* expectNoPiece(brain.complete(request), console)
      })))
  }

  for (const [name, reply] of chatCases) {
    it.effect(`OpenAI-compatible: ${name}`, () =>
      withRealHttp(Effect.gen(function*() {
        const console = yield* captureConsole()
        const server = yield* ChatServer.make((_, index) => reply(pads[index] ?? 0))
        const brain = yield* OpenAi.make({ ...common, apiKey: Option.some(Redacted.make(key)), baseUrl: server.url })
        yield* expectNoPiece(brain.complete(request), console)
      })))
  }
})

describe("a key set with spaces around it", () => {
  const withEnv = (env: Record<string, string>) =>
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(env))), { preserveEmptyStrings: true }))
  /** The brain's layer as a run builds it (fetch, which trims header values), asked once. */
  const askThroughLayer = (layer: typeof Anthropic.layer, env: Record<string, string>) =>
    Brain.pipe(
      Effect.flatMap((brain) => brain.complete(request)),
      Effect.provide(layer),
      Effect.provide(FetchHttpClient.layer),
      withEnv({ PLANCKCLAW_BRAIN_RETRIES: "0", PLANCKCLAW_DEBUG: "1", ...env }),
      Effect.flip,
      Effect.map((error) => "detail" in error ? error.detail : String(error))
    )

  it.effect("is sent, and scrubbed, without them: the echoed key never shows", () =>
    Effect.gen(function*() {
      const console = yield* captureConsole()
      const anthropic = yield* AnthropicServer.make((received) =>
        AnthropicServer.apiError(401, "authentication_error", `invalid x-api-key: "${received.headers["x-api-key"]}"`)
      )
      const chat = yield* ChatServer.make((received) => ChatServer.apiError(401, `invalid: "${received.headers["authorization"]}"`))
      const details = [
        yield* askThroughLayer(Anthropic.layer, { ANTHROPIC_API_KEY: ` ${key} `, ANTHROPIC_BASE_URL: anthropic.url }),
        yield* askThroughLayer(OpenAi.layer, { OPENAI_API_KEY: `${key}  `, OPENAI_BASE_URL: chat.url, PLANCKCLAW_MODEL: "m" })
      ]
      expect((yield* anthropic.requests)[0]?.headers["x-api-key"]).toBe(key)
      expect(details).toEqual([
        expect.stringContaining(`invalid x-api-key: "<redacted>"`),
        expect.stringContaining(`invalid: "Bearer <redacted>"`)
      ])
      expect([...details, ...(yield* console)].filter((line) => line.includes(key))).toEqual([])
    }))
})
