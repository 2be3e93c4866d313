/**
 * The HTTP brains write each request body from what they kept of the
 * history messages and tool specs sent before (KeptJson; the Chat
 * Completions conversions, ChatConversions): the bytes the model server
 * receives are still exactly JSON.stringify's of the request (the
 * Anthropic one as it is, the Chat Completions one as converted afresh),
 * whole answers and streamed ones alike, when one brain serves several
 * agents whose turns interleave (serve), with tool rounds growing the
 * array, calls with malformed arguments and failed results among them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option, Redacted, Stream } from "effect"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import { toChatRequest } from "../../src/brain/ChatRequest.js"
import { streamingRequest } from "../../src/brain/ChatStream.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import { promptMemo } from "../../src/agent/Prompt.js"
import type { BrainService, MessagesRequest } from "../../src/ports/Brain.js"
import type { ToolDefinition } from "../../src/ports/Claws.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as ChatCompletionsServer from "../support/ChatCompletionsServer.js"
import { withRealHttp } from "../support/TestClockHttp.js"

const tools: ReadonlyArray<ToolDefinition> = [
  { name: "time", description: "What time it is", input_schema: { type: "object" as const, properties: {} } },
  { name: "echo", description: "Says \"it\" back\n\u2028", input_schema: { type: "object" as const, properties: { text: { type: "string" } } } }
]

/**
 * Two agents' turns, interleaved, through one brain: each turn's request,
 * then a tool round on the same array (a call with malformed arguments and
 * its failed result every third turn). Returns what JSON.stringify writes of
 * each request as sent (`expected`).
 */
const interleavedTurns = (brain: BrainService, expected: (request: MessagesRequest, streamed: boolean) => string) =>
  Effect.gen(function*() {
    const agents = ["alice", "bob"].map((name) => ({ name, memo: promptMemo(), history: [] as Array<{ role: "user" | "assistant"; content: string }> }))
    const sent: Array<string> = []
    for (let turn = 0; turn < 8; turn++) {
      for (const agent of agents) {
        const cache = turn % 3 !== 0
        const messages = agent.memo.conversation(agent.history, `${agent.name} says ${turn}: "quoted" \\ 🦀`, cache)
        const request = agent.memo.turnRequest({
          model: "m",
          maxTokens: 64,
          system: turn < 4 ? `soul of ${agent.name}` : `soul of ${agent.name}\n---\nCONVERSATION SUMMARY:\nsummary ${turn}`,
          messages,
          tools,
          cache,
          specs: agent.memo.toolSpecs(tools, cache)
        })
        const streamed = (turn + agent.name.length) % 2 === 0
        if (streamed) yield* Stream.runDrain(brain.stream!(request))
        else yield* brain.complete(request)
        sent.push(expected(request, streamed))
        const malformed = turn % 3 === 0
        messages.push({ role: "assistant", content: [{ type: "tool_use", id: `t${turn}`, name: "echo", input: malformed ? "not an object" : { text: "hi" } }] })
        messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `t${turn}`, content: malformed ? "bad input" : "hi", ...(malformed ? { is_error: true } : {}) }] })
        yield* brain.complete(request)
        sent.push(expected(request, false))
        agent.history.push({ role: "user", content: `${agent.name} says ${turn}` }, { role: "assistant", content: `reply ${turn}` })
      }
    }
    return sent
  })

describe("request bodies from kept JSON", () => {
  it.effect("Anthropic: JSON.stringify's bytes for interleaved agents, whole and streamed", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(
        AnthropicServer.streamingWhenAsked(AnthropicServer.streamedText("Noted."), AnthropicServer.text("Noted."))
      )
      const brain = yield* Anthropic.make({
        apiKey: Redacted.make("test-key-not-secret"),
        baseUrl: server.url,
        timeout: Duration.seconds(60),
        retries: 0,
        debug: false
      })
      const sent = yield* interleavedTurns(brain, (request, streamed) => JSON.stringify(streamed ? { ...request, stream: true } : request))
      const received = (yield* server.requests).map((request) => request.rawBody)
      expect(received.length).toBe(32)
      expect(received).toEqual(sent)
    })))

  it.effect("Chat Completions: the bytes of a fresh conversion for interleaved agents, whole and streamed", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* ChatCompletionsServer.make((request) =>
        (request.body as { readonly stream?: unknown }).stream === true
          ? ChatCompletionsServer.streamedText("Noted.")
          : ChatCompletionsServer.text("Noted."))
      const brain = yield* OpenAi.make({
        apiKey: Option.some(Redacted.make("test-key-not-secret")),
        baseUrl: server.url,
        timeout: Duration.seconds(60),
        retries: 0,
        debug: false
      })
      const sent = yield* interleavedTurns(brain, (request, streamed) => {
        const chat = toChatRequest(request)
        return JSON.stringify(streamed ? streamingRequest(chat) : chat)
      })
      // A failed result whose malformed call has left the window reads as any failed result: its
      // conversion depended on the call, so it was not kept.
      const call: MessagesRequest["messages"][number] = { role: "assistant", content: [{ type: "tool_use", id: "x", name: "echo", input: "[1]" }] }
      const result: MessagesRequest["messages"][number] = { role: "user", content: [{ type: "tool_result", tool_use_id: "x", content: "bad", is_error: true }] }
      const withCall: MessagesRequest = { model: "m", max_tokens: 64, messages: [{ role: "user", content: "go" }, call, result] }
      const withoutCall: MessagesRequest = { ...withCall, messages: [result] }
      for (const request of [withCall, withoutCall]) {
        yield* brain.complete(request)
        sent.push(JSON.stringify(toChatRequest(request)))
      }
      const received = (yield* server.requests).map((request) => request.rawBody)
      expect(received.length).toBe(34)
      expect(received).toEqual(sent)
      expect(received[33]).toContain(`"content":"Error: bad"`)
      // The malformed calls' failed results carry the invalid-arguments message, not the cached plain one.
      expect(received.filter((body) => body.includes("the arguments of this echo call are not valid JSON")).length).toBeGreaterThan(0)
    })))
})
