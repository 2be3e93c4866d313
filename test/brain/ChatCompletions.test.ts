import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import { invalidArgumentsMessage, toChatRequest } from "../../src/brain/ChatRequest.js"
import { type ChatResponse, decodeChatResponse, fromChatResponse, usageOf } from "../../src/brain/ChatResponse.js"

const weather = {
  name: "weather",
  description: "Current weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}

/** Decodes a wire body and translates it, failing the test on any error. */
const translate = (body: unknown) => {
  const decoded = decodeChatResponse(body)
  if (Result.isFailure(decoded)) throw new Error(String(decoded.failure))
  return Result.getOrThrow(fromChatResponse(decoded.success, (i) => `fallback_${i}`))
}

const choice = (message: object, finish_reason: string | null = "stop") => ({ choices: [{ message, finish_reason }] })

describe("toChatRequest", () => {
  it("translates system, history, several calls, their results and the tools, byte for byte", () => {
    const request: MessagesRequest = {
      model: "gpt-4.1-mini",
      max_tokens: 1024,
      system: "You are terse.",
      messages: [
        { role: "user", content: "Weather in Lyon and Paris?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking both." },
            { type: "tool_use", id: "call_1", name: "weather", input: { city: "Lyon" } },
            { type: "tool_use", id: "call_2", name: "weather", input: { city: "Paris" } }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_1", content: "Sunny, 21°C" },
            { type: "tool_result", tool_use_id: "call_2", content: "Tool weather could not run: timeout", is_error: true }
          ]
        },
        { role: "assistant", content: [{ type: "tool_use", id: "call_3", name: "weather", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "call_3", content: "?" }, { type: "text", text: "hurry" }] }
      ],
      tools: [weather]
    }
    expect(JSON.stringify(toChatRequest(request))).toBe(JSON.stringify({
      model: "gpt-4.1-mini",
      max_tokens: 1024,
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Weather in Lyon and Paris?" },
        {
          role: "assistant",
          content: "Checking both.",
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "weather", arguments: "{\"city\":\"Lyon\"}" } },
            { id: "call_2", type: "function", function: { name: "weather", arguments: "{\"city\":\"Paris\"}" } }
          ]
        },
        { role: "tool", tool_call_id: "call_1", content: "Sunny, 21°C" },
        { role: "tool", tool_call_id: "call_2", content: "Error: Tool weather could not run: timeout" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_3", type: "function", function: { name: "weather", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "call_3", content: "?" },
        { role: "user", content: "hurry" }
      ],
      tools: [{
        type: "function",
        function: { name: "weather", description: weather.description, parameters: weather.input_schema }
      }]
    }))
  })

  it("leaves out a missing system prompt and an empty tool list; plain assistant text stays a string", () => {
    const request: MessagesRequest = {
      model: "llama3",
      max_tokens: 2048,
      messages: [{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }, { role: "user", content: "bye" }],
      tools: []
    }
    expect(JSON.stringify(toChatRequest(request))).toBe(
      "{\"model\":\"llama3\",\"max_tokens\":2048,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}," +
        "{\"role\":\"assistant\",\"content\":\"hello\"},{\"role\":\"user\",\"content\":\"bye\"}]}"
    )
  })

  it("sends bad arguments back verbatim and names them in the call's error result", () => {
    const request: MessagesRequest = {
      model: "m",
      max_tokens: 10,
      messages: [
        { role: "user", content: "go" },
        {
          role: "assistant",
          content: [
            { type: "tool_use", id: "c1", name: "weather", input: "{\"city\": Lyon" },
            { type: "tool_use", id: "c2", name: "weather", input: "[\"Lyon\"]" }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "c1", content: "Tool input must be a JSON object, got a string", is_error: true },
            { type: "tool_result", tool_use_id: "c2", content: "Tool input must be a JSON object, got a string", is_error: true }
          ]
        }
      ]
    }
    const { messages } = toChatRequest(request)
    expect(messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "weather", arguments: "{\"city\": Lyon" } },
          { id: "c2", type: "function", function: { name: "weather", arguments: "[\"Lyon\"]" } }
        ]
      },
      {
        role: "tool",
        tool_call_id: "c1",
        content: "Error: the arguments of this weather call are not valid JSON: {\"city\": Lyon. " +
          "Call weather again with its arguments as one JSON object matching its parameters schema."
      },
      {
        role: "tool",
        tool_call_id: "c2",
        content: "Error: the arguments of this weather call are an array, not an object: [\"Lyon\"]. " +
          "Call weather again with its arguments as one JSON object matching its parameters schema."
      }
    ])
    expect(invalidArgumentsMessage("t", "42")).toContain("are a number, not an object: 42.")
  })
})

describe("fromChatResponse", () => {
  it("several tool_calls become tool_use blocks in order, after the text, with stop_reason tool_use", () => {
    expect(translate({
      id: "chatcmpl-1",
      object: "chat.completion",
      model: "gpt-test",
      system_fingerprint: "fp",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: "Checking.",
          refusal: null,
          tool_calls: [
            { id: "call_a", type: "function", function: { name: "weather", arguments: "{\"city\":\"Lyon\"}" } },
            { id: "call_b", type: "function", function: { name: "get_time", arguments: "{}" } }
          ]
        },
        logprobs: null,
        finish_reason: "tool_calls"
      }]
    })).toEqual({
      id: "chatcmpl-1",
      type: "message",
      role: "assistant",
      model: "gpt-test",
      content: [
        { type: "text", text: "Checking." },
        { type: "tool_use", id: "call_a", name: "weather", input: { city: "Lyon" } },
        { type: "tool_use", id: "call_b", name: "get_time", input: {} }
      ],
      stop_reason: "tool_use"
    })
  })

  it("maps finish_reason: stop, null → end_turn; length → max_tokens; content_filter → refusal; calls under stop → tool_use", () => {
    const reasons = (finish: string | null, message: object = { content: "x" }) =>
      translate(choice(message, finish)).stop_reason
    expect(reasons("stop")).toBe("end_turn")
    expect(reasons(null)).toBe("end_turn")
    // The safety filter stopped it part-way: not a whole answer (Turn says so and stores nothing).
    expect(reasons("content_filter")).toBe("refusal")
    expect(reasons("length")).toBe("max_tokens")
    const calls = { content: null, tool_calls: [{ id: "c", function: { name: "t", arguments: "{}" } }] }
    expect(reasons("tool_calls", calls)).toBe("tool_use")
    expect(reasons("stop", calls)).toBe("tool_use")
    expect(reasons("length", calls)).toBe("max_tokens")
    expect(reasons("content_filter", calls)).toBe("refusal")
  })

  it("keeps arguments that are not a JSON object as the raw string; empty or missing ones are {}", () => {
    const response = translate(choice({
      tool_calls: [
        { id: "c1", function: { name: "t", arguments: "{\"a\": 1," } },
        { id: "c2", function: { name: "t", arguments: "[1]" } },
        { id: "c3", function: { name: "t", arguments: "" } },
        { id: "c4", function: { name: "t" } },
        { id: "c5", function: { name: "t", arguments: { already: "an object" } } }
      ]
    }, "tool_calls"))
    expect(response.content).toEqual([
      { type: "tool_use", id: "c1", name: "t", input: "{\"a\": 1," },
      { type: "tool_use", id: "c2", name: "t", input: "[1]" },
      { type: "tool_use", id: "c3", name: "t", input: {} },
      { type: "tool_use", id: "c4", name: "t", input: {} },
      { type: "tool_use", id: "c5", name: "t", input: { already: "an object" } }
    ])
  })

  it("is lenient: minimal bodies, missing ids, content parts, a refusal instead of content", () => {
    expect(translate({ choices: [{ message: {} }] })).toEqual({
      type: "message",
      role: "assistant",
      content: [],
      stop_reason: "end_turn"
    })
    expect(translate(choice({ tool_calls: [{ function: { name: "t", arguments: "{}" } }] }, null)).content).toEqual([
      { type: "tool_use", id: "fallback_0", name: "t", input: {} }
    ])
    expect(translate(choice({ content: [{ type: "text", text: "a" }, { type: "image" }, { type: "text", text: "b" }] })).content)
      .toEqual([{ type: "text", text: "ab" }])
    expect(translate(choice({ content: null, refusal: "I can't help with that." }, "content_filter")).content)
      .toEqual([{ type: "text", text: "I can't help with that." }])
  })

  it("an answer without choices is an error, not an empty reply", () => {
    const decoded = Result.getOrThrow(decodeChatResponse({ choices: [] }))
    expect(fromChatResponse(decoded, String)).toEqual(Result.fail("answer has no choices"))
    expect(Result.isFailure(decodeChatResponse({ object: "chat.completion" }))).toBe(true)
  })

  it("round trip: the calls the agent echoes back are the calls the server sent", () => {
    const wireCalls = [
      { id: "call_a", type: "function", function: { name: "weather", arguments: "{\"city\":\"Lyon\"}" } },
      { id: "call_b", type: "function", function: { name: "weather", arguments: "{oops" } }
    ]
    const response = translate(choice({ content: "Hm.", tool_calls: wireCalls }, "tool_calls"))
    const echoed = toChatRequest({
      model: "m",
      max_tokens: 1,
      messages: [{ role: "user", content: "q" }, { role: "assistant", content: response.content as never }]
    })
    expect(echoed.messages[1]).toEqual({ role: "assistant", content: "Hm.", tool_calls: wireCalls })
  })
})

describe("usageOf", () => {
  it("maps prompt, completion and cached tokens to the Messages usage shape", () => {
    const usage = (value: unknown) => usageOf({ choices: [], usage: value } as ChatResponse)
    expect(usage({ prompt_tokens: 30, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 10 } })).toEqual({
      input_tokens: 20,
      output_tokens: 5,
      cache_read_input_tokens: 10
    })
    expect(usage({ prompt_tokens: 30, completion_tokens: 5 })).toEqual({ input_tokens: 30, output_tokens: 5 })
    expect(usage(undefined)).toBeUndefined()
  })
})
