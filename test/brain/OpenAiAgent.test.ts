/**
 * The whole agent thinking through the OpenAI-compatible brain against a
 * loopback Chat Completions server: every round of a turn goes over real
 * HTTP, and the exact bodies the server received are asserted.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import * as Server from "../support/ChatCompletionsServer.js"
import { diceTool, harness, line, timeTool } from "../support/Harness.js"
import { withRealHttp } from "../support/TestClockHttp.js"

const wireTools = [timeTool, diceTool].map(({ definition }) => ({
  type: "function",
  function: { name: definition.name, description: definition.description, parameters: definition.input_schema }
}))

/** The agent over a real OpenAI brain (no key: the server is on loopback) pointed at `server`. */
const agentOn = (server: Server.ChatCompletionsServer, rounds: number) =>
  Effect.gen(function*() {
    const brain = yield* OpenAi.make({
      apiKey: Option.none(),
      baseUrl: server.url,
      timeout: Duration.seconds(60),
      retries: 0,
      debug: false
    })
    const viaHttp = (request: MessagesRequest) => brain.complete(request)
    return yield* harness({ soul: "You are Planck.", tools: [timeTool, diceTool], script: Array(rounds).fill(viaHttp) })
  })

const bodies = (server: Server.ChatCompletionsServer) =>
  Effect.map(server.requests, (requests) => requests.map((request) => request.rawBody))

describe("the agent on an OpenAI-compatible server", () => {
  it.effect("runs several tools of one response, then a second round, sending the exact Chat Completions bodies", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(
        Server.toolCalls([
          Server.call("call_1", "get_time", "{}"),
          Server.call("call_2", "roll_dice", "{\"sides\":20}")
        ], { content: "Let me check.", flavor: "ollama" }),
        Server.toolCalls([Server.call("call_3", "get_time", "{}")], { flavor: "llamacpp" }),
        Server.text("It is 1700000000 and you rolled 4.")
      ))
      const h = yield* agentOn(server, 3)
      // What the model said before its tool calls begins the reply (issue 48).
      expect(yield* h.say("time and a d20?")).toMatchObject({ channel: "cli", text: "Let me check.\n\nIt is 1700000000 and you rolled 4." })

      const base = { model: "test-model", max_tokens: 1024 }
      const first = [{ role: "system", content: "You are Planck." }, { role: "user", content: "time and a d20?" }]
      const round1 = [
        ...first,
        {
          role: "assistant",
          content: "Let me check.",
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "get_time", arguments: "{}" } },
            { id: "call_2", type: "function", function: { name: "roll_dice", arguments: "{\"sides\":20}" } }
          ]
        },
        { role: "tool", tool_call_id: "call_1", content: "1700000000" },
        { role: "tool", tool_call_id: "call_2", content: "rolled d20: 4" }
      ]
      const round2 = [
        ...round1,
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_3", type: "function", function: { name: "get_time", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "call_3", content: "1700000000" }
      ]
      expect(yield* bodies(server)).toEqual([first, round1, round2].map((messages) =>
        JSON.stringify({ ...base, messages, tools: wireTools })
      ))
      expect(h.read("history.jsonl")).toBe(
        line("user", "time and a d20?") + line("assistant", "Let me check.\n\nIt is 1700000000 and you rolled 4.")
      )
    })))

  it.effect("an answer cut by `length` is delivered marked as cut", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(Server.completion({ content: "The long story is", finishReason: "length" })))
      const h = yield* agentOn(server, 1)
      expect((yield* h.say("tell me everything")).text).toBe(
        "The long story is\n\n[answer cut short: the model hit its token limit]"
      )
    })))

  it.effect("arguments that are not valid JSON are answered to the model as a tool error naming them", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(
        Server.toolCalls([
          Server.call("call_bad", "roll_dice", "{\"sides\": twenty}"),
          Server.call("call_ok", "get_time", "{}")
        ]),
        Server.text("Sorry, it is 1700000000; which die?")
      ))
      const h = yield* agentOn(server, 2)
      expect((yield* h.say("roll")).text).toBe("Sorry, it is 1700000000; which die?")
      const second = JSON.parse((yield* bodies(server))[1]!) as { messages: ReadonlyArray<unknown> }
      expect(second.messages.slice(2)).toEqual([
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_bad", type: "function", function: { name: "roll_dice", arguments: "{\"sides\": twenty}" } },
            { id: "call_ok", type: "function", function: { name: "get_time", arguments: "{}" } }
          ]
        },
        {
          role: "tool",
          tool_call_id: "call_bad",
          content: "Error: the arguments of this roll_dice call are not valid JSON: {\"sides\": twenty}. " +
            "Call roll_dice again with its arguments as one JSON object matching its parameters schema."
        },
        { role: "tool", tool_call_id: "call_ok", content: "1700000000" }
      ])
    })))

  it.effect("a permanent error ends the turn saying the brain is misconfigured, and stores nothing", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(Server.apiError(404, "model 'test-model' not found", "ollama")))
      const h = yield* agentOn(server, 1)
      expect((yield* h.say("hi")).text).toBe(
        "I can't think right now: my brain is misconfigured (the model or API address is unknown). The log says what to fix."
      )
      // The turn, then the models list it asked for (none here): never retried.
      expect((yield* server.requests).map((request) => request.method)).toEqual(["POST", "GET"])
      expect(h.read("history.jsonl") ?? "").toBe("")
    })))
})
