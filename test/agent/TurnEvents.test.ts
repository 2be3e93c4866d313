/**
 * A turn as it goes (Agent.respondStreaming) over a real streaming brain: the
 * Anthropic brain against a loopback server sending server-sent events chunk
 * by chunk, the real agent with its memory directory and usage ledger.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Deferred, Duration, Effect, Fiber, Layer, Queue, Redacted, Stream } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import { Inbox } from "../../src/memory/Inbox.js"
import { Brain } from "../../src/ports/Brain.js"
import type { TurnEvent } from "../../src/agent/Turn.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import { line, timeTool } from "../support/Harness.js"
import { tempDir } from "../support/Sandbox.js"
import { withRealHttp } from "../support/TestClockHttp.js"

const { blockEvents, events, messageEnd, messageStart, streamEvents } = AnthropicServer

/** The real agent on the Anthropic brain at `url`, with the time tool, in a fresh memory directory. */
const agentOn = (url: string) =>
  Effect.gen(function*() {
    const directory = yield* tempDir()
    fs.writeFileSync(path.join(directory, "soul.md"), "You are Planck.")
    const provider = ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: directory, PLANCKCLAW_MODEL: "test-model" })
    const brain = Layer.effect(
      Brain,
      Anthropic.make({ apiKey: Redacted.make("test-key-not-secret"), baseUrl: url, timeout: Duration.seconds(60), retries: 2, debug: false })
    )
    const context = yield* Layer.build(Agent.layerWithMemory.pipe(
      Layer.provide(Layer.merge(brain, InMemoryClaws.layer([timeTool]))),
      Layer.provide(ConfigProvider.layer(provider))
    ))
    const agent = Context.get(context, Agent.Agent)
    const inbox = Context.get(context, Inbox)
    /** Sends `text`; its events arrive in the queue as the turn goes. */
    const say = (text: string) =>
      Effect.gen(function*() {
        const pending = yield* inbox.accept({ channel: "cli", text })
        const arrived = yield* Queue.unbounded<TurnEvent>()
        const fiber = yield* Effect.forkChild(Stream.runForEach(agent.respondStreaming(pending), (event) => Queue.offer(arrived, event)))
        return { arrived, fiber }
      })
    const read = (name: string) => {
      const file = path.join(directory, name)
      return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
    }
    return { say, read }
  })

const usageLines = (text: string) => text.trim().split("\n").map((raw) => JSON.parse(raw) as Record<string, unknown>)

describe("a turn as it goes", () => {
  it.effect("tells the text as it is written, each tool call and its result, then the end; the reply keeps the text before the calls", () =>
    withRealHttp(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        events(streamEvents([
          { type: "text", pieces: ["Let me ", "check."] },
          { type: "tool_use", id: "toolu_1", name: "get_time", input: {} }
        ], {
          start: { input_tokens: 100, output_tokens: 1, cache_creation_input_tokens: 900, cache_read_input_tokens: 0 },
          end: { output_tokens: 20 }
        })),
        events([
          messageStart({ input_tokens: 30, output_tokens: 1, cache_creation_input_tokens: 50, cache_read_input_tokens: 900 }),
          ...blockEvents({ type: "text", pieces: ["It is ", "noon."] }, 0).slice(0, 2),
          gate,
          ...blockEvents({ type: "text", pieces: ["It is ", "noon."] }, 0).slice(2),
          ...messageEnd("end_turn", { output_tokens: 8 })
        ])
      ))
      const h = yield* agentOn(server.url)
      const { arrived, fiber } = yield* h.say("What time is it?")

      const told: Array<TurnEvent> = []
      // Everything up to the first piece of the second answer, while the server still holds the rest.
      while (told.at(-1)?._tag !== "TextDelta" || told.length < 5) told.push(yield* Queue.take(arrived))
      expect(told).toEqual([
        { _tag: "TextDelta", text: "Let me " },
        { _tag: "TextDelta", text: "check." },
        { _tag: "ToolCallStart", name: "get_time", input: {} },
        // The TestClock does not move while the tool runs.
        { _tag: "ToolResult", name: "get_time", ok: true, ms: 0 },
        { _tag: "TextDelta", text: "It is " }
      ])
      expect(fiber.pollUnsafe()).toBeUndefined()
      expect(h.read("history.jsonl")).toBe("")

      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(fiber)
      const reply = "Let me check.\n\nIt is noon."
      expect(yield* Queue.takeAll(arrived)).toEqual([
        { _tag: "TextDelta", text: "noon." },
        {
          _tag: "End",
          reply,
          stored: true,
          toolCalls: [{ name: "get_time", ok: true }],
          // The two answers' counts summed: message_start's input counts, message_delta's output total.
          usage: { input: 130, output: 28, cacheWrite: 950, cacheRead: 900 }
        }
      ])
      expect(h.read("history.jsonl")).toBe(line("user", "What time is it?") + line("assistant", reply))
      expect(usageLines(h.read("usage.jsonl")).map(({ cache_read, cache_write, input, kind, output }) => ({ kind, input, output, cache_write, cache_read })))
        .toEqual([
          { kind: "turn", input: 100, output: 20, cache_write: 900, cache_read: 0 },
          { kind: "turn", input: 30, output: 8, cache_write: 50, cache_read: 900 }
        ])

      // Each request asked for a stream and kept its prompt-caching breakpoints.
      for (const request of yield* server.requests) {
        const body = JSON.parse(request.rawBody) as { stream: unknown; system: ReadonlyArray<{ cache_control?: unknown }> }
        expect(body.stream).toBe(true)
        expect(body.system.at(-1)?.cache_control).toEqual({ type: "ephemeral" })
      }
    })))

  it.effect("a server that does not stream: the same outcome, each answer's text told in one piece", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.toolUse([{ id: "toolu_1", name: "get_time", input: {} }]),
        AnthropicServer.text("It is noon.")
      ))
      const h = yield* agentOn(server.url)
      const { arrived, fiber } = yield* h.say("What time is it?")
      yield* Fiber.join(fiber)
      const reply = "Let me check.\n\nIt is noon."
      expect(yield* Queue.takeAll(arrived)).toEqual([
        { _tag: "TextDelta", text: "Let me check." },
        { _tag: "ToolCallStart", name: "get_time", input: {} },
        { _tag: "ToolResult", name: "get_time", ok: true, ms: 0 },
        { _tag: "TextDelta", text: "It is noon." },
        { _tag: "End", reply, stored: true, toolCalls: [{ name: "get_time", ok: true }], usage: { input: 2, output: 2, cacheWrite: 0, cacheRead: 0 } }
      ])
      expect(h.read("history.jsonl")).toBe(line("user", "What time is it?") + line("assistant", reply))
      expect(usageLines(h.read("usage.jsonl"))).toHaveLength(2)
    })))

  it.effect("a stream cut mid-way ends the turn with the apology, storing nothing of the half answer", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        events([messageStart(), ...blockEvents({ type: "text", pieces: ["Half an "] }, 0).slice(0, 2)], "drop")
      ))
      const h = yield* agentOn(server.url)
      const { arrived, fiber } = yield* h.say("Tell me")
      yield* Fiber.join(fiber)
      expect(yield* Queue.takeAll(arrived)).toEqual([
        { _tag: "TextDelta", text: "Half an " },
        { _tag: "End", reply: Agent.APOLOGY, stored: false, notAnswered: "failed", toolCalls: [], usage: { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 } }
      ])
      expect(h.read("history.jsonl")).toBe("")
      // Not asked again: the text was already told.
      expect(yield* server.requests).toHaveLength(1)
    })))
})
