/**
 * An answer the model's safety filter stopped part-way (Anthropic's
 * `stop_reason: "refusal"`, Chat Completions' `finish_reason:
 * "content_filter"`) reaches the turn as a refusal on every path, streamed
 * or whole, over HTTP or the brain FIFO: the user is told, and nothing is
 * stored, where it once was replied and kept as the model's whole answer.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { Brain, decodeBrainAnswer } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import type { MemorySnapshot } from "../../src/memory/Memory.js"
import { plainBrainAnswer } from "../../src/pipes/BrainFrame.js"
import * as Turn from "../../src/agent/Turn.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as ChatServer from "../support/ChatCompletionsServer.js"
import { withRealHttp } from "../support/TestClockHttp.js"

const snapshot: MemorySnapshot = { soul: "Soul.", summary: "", history: [] }
const { blockEvents, events, messageEnd, messageStart } = AnthropicServer
const PARTIAL = "Sure. Step one is to "
const STOPPED = { reply: "Sure. Step one is to\n\n[answer cut short: the model's safety filter stopped it]", stored: false }

const anthropic = (baseUrl: string) =>
  Layer.effect(Brain, Anthropic.make({ apiKey: Redacted.make("test-key-not-secret"), baseUrl, timeout: Duration.seconds(60), retries: 0, debug: false }))
const openai = (baseUrl: string) =>
  Layer.effect(Brain, OpenAi.make({ apiKey: Option.some(Redacted.make("test-key-not-secret")), baseUrl, timeout: Duration.seconds(60), retries: 0, debug: false }))

/** A turn on `brain`; watched (`streamed`), it asks for a stream, otherwise for the whole answer. */
const turnOn = <E, R>(brain: Layer.Layer<Brain, E, R>, model: string, streamed: boolean) =>
  Turn.run({
    snapshot,
    text: "question",
    config: { model, maxTokens: 100, maxToolRounds: 2 },
    onEvent: streamed ? () => Effect.void : undefined
  }).pipe(
    Effect.map(({ reply, stored }) => ({ reply, stored })),
    Effect.provide(Layer.merge(brain, InMemoryClaws.layer([])))
  )

describe("an answer the model's safety filter stopped", () => {
  it.effect("anthropic, streamed and whole: stop_reason refusal is said, not stored", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        events([messageStart(), ...blockEvents({ type: "text", pieces: [PARTIAL] }, 0), ...messageEnd("refusal")]),
        AnthropicServer.message([{ type: "text", text: PARTIAL }], "refusal")
      ))
      expect(yield* turnOn(anthropic(server.url), "claude-test", true)).toEqual(STOPPED)
      expect(yield* turnOn(anthropic(server.url), "claude-test", false)).toEqual(STOPPED)
    })))

  it.effect("openai-compatible, streamed and whole: finish_reason content_filter is said, not stored", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* ChatServer.make(ChatServer.replies(
        ChatServer.events([
          ChatServer.chunk({ role: "assistant", content: "" }),
          ChatServer.chunk({ content: PARTIAL }),
          ChatServer.chunk({}, "content_filter"),
          ChatServer.usageChunk(),
          ChatServer.DONE
        ]),
        ChatServer.completion({ content: PARTIAL, finishReason: "content_filter" })
      ))
      expect(yield* turnOn(openai(server.url), "gpt-test", true)).toEqual(STOPPED)
      expect(yield* turnOn(openai(server.url), "gpt-test", false)).toEqual(STOPPED)
    })))

  it.effect("with no text at all, the reply says it was refused, not that it was empty", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* ChatServer.make(ChatServer.replies(ChatServer.completion({ finishReason: "content_filter" })))
      expect(yield* turnOn(openai(server.url), "gpt-test", false)).toEqual({
        reply: "My answer was refused before I could write anything (the model's safety filter stopped it).",
        stored: false
      })
    })))

  it.effect("a brain bridge's answer frame carries the refusal to the agent as it is", () =>
    Effect.gen(function*() {
      // What `planckclaw bridge openai` writes for a content_filter answer, read as FifoBrain reads it.
      const frame = { type: "message", role: "assistant", content: [{ type: "text", text: PARTIAL }], stop_reason: "refusal" }
      expect(plainBrainAnswer(frame)?.stop_reason).toBe("refusal")
      expect((yield* decodeBrainAnswer(JSON.stringify(frame))).stop_reason).toBe("refusal")
    }))
})
