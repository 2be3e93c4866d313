/**
 * The Anthropic brain writes each request body from the JSON it kept of the
 * history messages and tool specs it sent before (KeptJson): the bytes the
 * model server receives are still exactly JSON.stringify's, whole answers
 * and streamed ones alike, when one brain serves several agents whose turns
 * interleave (serve), each resending its own history and the same tools.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Redacted, Stream } from "effect"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import { promptMemo } from "../../src/agent/Prompt.js"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import type { ToolDefinition } from "../../src/ports/Claws.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import { withRealHttp } from "../support/TestClockHttp.js"

const tools: ReadonlyArray<ToolDefinition> = [
  { name: "time", description: "What time it is", input_schema: { type: "object" as const, properties: {} } },
  { name: "echo", description: "Says \"it\" back\n\u2028", input_schema: { type: "object" as const, properties: { text: { type: "string" } } } }
]

const settings = (baseUrl: string): Anthropic.AnthropicConfig => ({
  apiKey: Redacted.make("test-key-not-secret"),
  baseUrl,
  timeout: Duration.seconds(60),
  retries: 0,
  debug: false
})

describe("Anthropic request bodies from kept JSON", () => {
  it.effect("are JSON.stringify's bytes for interleaved agents, whole and streamed", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(
        AnthropicServer.streamingWhenAsked(AnthropicServer.streamedText("Noted."), AnthropicServer.text("Noted."))
      )
      const brain = yield* Anthropic.make(settings(server.url))
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
          if (streamed) {
            yield* Stream.runDrain(brain.stream!(request))
            sent.push(JSON.stringify({ ...request, stream: true }))
          } else {
            yield* brain.complete(request)
            sent.push(JSON.stringify(request))
          }
          // A tool round grows the same array: the next request must carry the new messages.
          messages.push({ role: "assistant", content: [{ type: "tool_use", id: `t${turn}`, name: "time", input: {} }] })
          messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `t${turn}`, content: "noon" }] })
          yield* brain.complete(request as MessagesRequest)
          sent.push(JSON.stringify(request))
          agent.history.push({ role: "user", content: `${agent.name} says ${turn}` }, { role: "assistant", content: `reply ${turn}` })
        }
      }
      const received = (yield* server.requests).map((request) => request.rawBody)
      expect(received.length).toBe(32)
      expect(received).toEqual(sent)
    })))
})
