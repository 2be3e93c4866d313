import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Option, Queue, Redacted, Stream } from "effect"
import { type MessagesRequest } from "../../src/ports/Brain.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import * as Server from "../support/ChatCompletionsServer.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import * as BrainStreams from "../support/BrainStreams.js"
import { withRealHttp } from "../support/TestClockHttp.js"
import { TestClock } from "effect/testing"
import { advanceTo, awaitPendingSleep, letArrive } from "../support/TestClockWait.js"

const { chunk, DONE, events, streamChunks, usageChunk } = Server

const request: MessagesRequest = {
  model: "gpt-test",
  max_tokens: 256,
  system: "Be brief.",
  messages: [{ role: "user", content: "Hello?" }]
}

const settings = (baseUrl: string, overrides: Partial<OpenAi.OpenAiConfig> = {}): OpenAi.OpenAiConfig => ({
  apiKey: Option.some(Redacted.make("test-key-not-secret")),
  baseUrl,
  timeout: Duration.seconds(60),
  retries: 4,
  debug: false,
  ...overrides
})

const startStream = (config: OpenAi.OpenAiConfig) => BrainStreams.startStream(OpenAi.make(config), request)

const collect = (config: OpenAi.OpenAiConfig) => Effect.flatMap(OpenAi.make(config), (brain) => Stream.runCollect(brain.stream!(request)))

const { answerOf, deltas } = BrainStreams

/**
 * How a stream under test failed; a stream still open once real seconds
 * have passed fails the test readably (no assertion depends on real time).
 */
const failureOf = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.flip(Fiber.join(fiber)).pipe(
    Effect.raceFirst(TestClock.withLive(Effect.sleep("5 seconds")).pipe(
      Effect.andThen(Effect.die(new Error("the stream is still open after its timeout")))
    ))
  )

/** Keep-alives as servers send them: SSE comments (OpenRouter, llama.cpp), chunks that carry nothing. */
const keepAlives = [
  ": keep-alive\n\n",
  ": OPENROUTER PROCESSING\n\n",
  chunk({}),
  chunk({ content: "" }),
  chunk({ role: "assistant", content: null }),
  `data: ${JSON.stringify({ id: "chatcmpl-stream", object: "chat.completion.chunk", model: "gpt-test", choices: [] })}\n\n`
]

describe("OpenAI-compatible brain, streamed", () => {
  it.effect("asks for a stream with usage, and passes text on before the answer ends", () =>
    withRealHttp(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const server = yield* Server.make(Server.replies(events([
        chunk({ role: "assistant", content: "" }),
        chunk({ content: "Hel" }),
        gate,
        chunk({ content: "lo." }),
        chunk({}, "stop"),
        usageChunk(),
        DONE
      ])))
      const { arrived, fiber } = yield* startStream(settings(server.url))

      expect(yield* Queue.take(arrived)).toEqual({ _tag: "TextDelta", text: "Hel" })
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(fiber)
      const rest = yield* Queue.takeAll(arrived)
      expect(deltas(rest)).toEqual(["lo."])
      expect(answerOf(rest)).toEqual({
        id: "chatcmpl-stream",
        type: "message",
        role: "assistant",
        model: "gpt-test",
        content: [{ type: "text", text: "Hello." }],
        stop_reason: "end_turn",
        // The last chunk's counts, cached tokens apart as the Messages API counts them.
        usage: { input_tokens: 20, output_tokens: 5, cache_read_input_tokens: 10 }
      })
      const [received, ...others] = yield* server.requests
      expect(others).toEqual([])
      expect(received?.rawBody).toBe(JSON.stringify({
        model: "gpt-test",
        max_tokens: 256,
        messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hello?" }],
        stream: true,
        stream_options: { include_usage: true }
      }))
    })))

  it.effect("assembles tool calls from their pieces by index, after the text written before them", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(events(streamChunks(["Let me ", "check."], [
        { id: "call_1", name: "weather", args: "{\"city\":\"Lyon\"}" },
        { id: "call_2", name: "clock", args: "" }
      ]))))
      const all = yield* collect(settings(server.url))
      expect(deltas(all)).toEqual(["Let me ", "check."])
      const answer = answerOf(all)
      expect(answer.stop_reason).toBe("tool_use")
      expect(answer.content).toEqual([
        { type: "text", text: "Let me check." },
        { type: "tool_use", id: "call_1", name: "weather", input: { city: "Lyon" } },
        { type: "tool_use", id: "call_2", name: "clock", input: {} }
      ])
    })))

  it.effect("tool calls without index, each whole in its own chunk (Gemini, older Ollama, SGLang), stay apart", () =>
    withRealHttp(Effect.gen(function*() {
      const call = (id: string, name: string, args: string) =>
        chunk({ tool_calls: [{ id, type: "function", function: { name, arguments: args } }] })
      const server = yield* Server.make(Server.replies(events([
        chunk({ role: "assistant", content: "" }),
        call("call_a", "weather", "{\"city\":\"Lyon\"}"),
        call("call_b", "clock", "{\"tz\":\"UTC\"}"),
        chunk({}, "tool_calls"),
        DONE
      ])))
      expect(answerOf(yield* collect(settings(server.url, { retries: 0 }))).content).toEqual([
        { type: "tool_use", id: "call_a", name: "weather", input: { city: "Lyon" } },
        { type: "tool_use", id: "call_b", name: "clock", input: { tz: "UTC" } }
      ])
    })))

  it.effect("without index, a piece with neither id nor name continues the call before it; a new name starts one", () =>
    withRealHttp(Effect.gen(function*() {
      const piece = (fn: { name?: string; arguments: string }, id?: string) =>
        chunk({ tool_calls: [{ ...(id === undefined ? {} : { id }), function: fn }] })
      const server = yield* Server.make(Server.replies(events([
        piece({ name: "weather", arguments: "" }, "call_a"),
        piece({ arguments: "{\"city\":" }),
        piece({ arguments: "\"Lyon\"}" }, "call_a"), // its own id again: the same call
        piece({ name: "clock", arguments: "{\"tz\":" }), // no id (some local servers): its name starts it
        piece({ arguments: "\"UTC\"}" }),
        chunk({}, "tool_calls"),
        DONE
      ])))
      const [first, second, ...rest] = answerOf(yield* collect(settings(server.url, { retries: 0 }))).content
      expect(first).toEqual({ type: "tool_use", id: "call_a", name: "weather", input: { city: "Lyon" } })
      expect(second).toMatchObject({ type: "tool_use", name: "clock", input: { tz: "UTC" } })
      expect(rest).toEqual([])
    })))

  it.effect("calls that reuse one index (Ollama gives every call index 0) stay apart when each brings its own id", () =>
    withRealHttp(Effect.gen(function*() {
      const piece = (fn: { name?: string; arguments: string }, id?: string) =>
        chunk({ tool_calls: [{ index: 0, ...(id === undefined ? {} : { id, type: "function" }), function: fn }] })
      const server = yield* Server.make(Server.replies(events([
        chunk({ role: "assistant", content: "" }),
        piece({ name: "file_write", arguments: "{\"path\":\"hello.py\"}" }, "call_a"),
        piece({ name: "file_write", arguments: "{\"path\":" }, "call_b"),
        piece({ arguments: "\"world.py\"}" }), // no id: the call its index now stands for
        piece({ arguments: "" }, "call_b"), // its own id again: the same call
        chunk({}, "tool_calls"),
        DONE
      ])))
      expect(answerOf(yield* collect(settings(server.url, { retries: 0 }))).content).toEqual([
        { type: "tool_use", id: "call_a", name: "file_write", input: { path: "hello.py" } },
        { type: "tool_use", id: "call_b", name: "file_write", input: { path: "world.py" } }
      ])
    })))

  it.effect("a piece that brings a new id at its index before the call's arguments are whole continues that call", () =>
    withRealHttp(Effect.gen(function*() {
      const piece = (id: string, fn: { name?: string; arguments: string }) =>
        chunk({ tool_calls: [{ index: 0, id, type: "function", function: fn }] })
      const server = yield* Server.make(Server.replies(events([
        piece("call_1", { name: "weather", arguments: "" }),
        piece("call_2", { arguments: "{\"city\":" }), // a gateway that names each piece afresh
        piece("call_3", { arguments: "\"Lyon\"}" }),
        chunk({}, "tool_calls"),
        DONE
      ])))
      const [only, ...rest] = answerOf(yield* collect(settings(server.url, { retries: 0 }))).content
      expect(only).toMatchObject({ type: "tool_use", name: "weather", input: { city: "Lyon" } })
      expect(rest).toEqual([])
    })))

  it.effect("a streamed tool call that never names its function is refused as the whole answer would be, naming what is missing", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(events([
        chunk({ tool_calls: [{ index: 0, id: "call_1", function: { arguments: "{}" } }] }),
        chunk({}, "tool_calls"),
        DONE
      ])))
      const error = yield* Effect.flip(collect(settings(server.url, { retries: 0 })))
      expect(error.reason).toBe("fatal")
      expect(error.detail).toContain("answer is not a Chat Completions response")
      expect(error.detail).toContain("function.name")
      expect(error.detail).toContain("Missing key")
    })))

  it.effect("text sent as content parts (Mistral) is passed on and kept; a thinking part is not the answer's text", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(events([
        chunk({ role: "assistant", content: "" }),
        chunk({ content: [{ type: "thinking", thinking: [{ type: "text", text: "The user greets me." }] }] }),
        chunk({ content: [{ type: "text", text: "Hel" }] }),
        chunk({ content: [{ type: "text", text: "lo" }, { type: "text", text: "." }] }),
        chunk({}, "stop"),
        usageChunk(),
        DONE
      ])))
      const all = yield* collect(settings(server.url))
      expect(deltas(all)).toEqual(["Hel", "lo."])
      expect(answerOf(all).content).toEqual([{ type: "text", text: "Hello." }])
    })))

  it.effect("a server that ignores stream and answers JSON is read as one answer, nothing lost", () =>
    withRealHttp(Effect.gen(function*() {
      for (const flavor of ["openai", "ollama", "llamacpp"] as const) {
        const server = yield* Server.make(Server.replies(Server.text("Whole.", flavor)))
        const all = yield* collect(settings(server.url))
        expect(all).toHaveLength(1)
        expect(answerOf(all).content).toEqual([{ type: "text", text: "Whole." }])
        expect(answerOf(all).usage?.output_tokens).toBe(5)
      }
    })))

  it.effect("a stream without a usage chunk or [DONE] still ends at its finish reason", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(events([chunk({ content: "Brief." }), chunk({}, "stop")])))
      const answer = answerOf(yield* collect(settings(server.url)))
      expect(answer.content).toEqual([{ type: "text", text: "Brief." }])
      expect(answer.usage).toBeUndefined()
    })))

  it.effect("retries a 503 before the stream starts, and the text comes once", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(Server.apiError(503, "Loading model"), Server.streamedText("Rea", "dy.")))
      const { arrived, fiber } = yield* startStream(settings(server.url))
      yield* server.awaitRequests(1)
      yield* advanceTo(1_000)
      yield* Fiber.join(fiber)
      const all = yield* Queue.takeAll(arrived)
      expect(deltas(all)).toEqual(["Rea", "dy."])
      expect(answerOf(all).content).toEqual([{ type: "text", text: "Ready." }])
      expect(yield* server.requests).toHaveLength(2)
    })))

  it.effect("asks again with max_completion_tokens when the server refuses max_tokens, streaming both times", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.refusing(["max_tokens"], Server.replies(Server.streamedText("Fine."))))
      const all = yield* collect(settings(server.url))
      expect(answerOf(all).content).toEqual([{ type: "text", text: "Fine." }])
      const [refused, asked] = yield* server.requests
      expect(refused?.body).toMatchObject({ max_tokens: 256, stream: true })
      expect(asked?.body).toMatchObject({ max_completion_tokens: 256, stream: true, stream_options: { include_usage: true } })
    })))

  it.effect("a server that refuses stream_options (Azure AI Foundry) is asked again without it, and never again with it", () =>
    withRealHttp(Effect.gen(function*() {
      const refusal = Server.respond(400, {
        detail: "Extra parameters ['stream_options'] are not allowed when extra-parameters is not set or set to be 'error'. " +
          "Set extra-parameters to 'pass-through' to pass to the model."
      })
      const server = yield* Server.make((request) =>
        typeof request.body === "object" && request.body !== null && "stream_options" in request.body
          ? refusal
          : events(streamChunks(["Fine."]).filter((piece) => !piece.includes("\"usage\"")))
      )
      const brain = yield* OpenAi.make(settings(server.url, { retries: 0 }))
      for (const _ of [1, 2]) {
        expect(answerOf(yield* Stream.runCollect(brain.stream!(request))).content).toEqual([{ type: "text", text: "Fine." }])
      }
      const [refused, asked, next, ...rest] = yield* server.requests
      expect(refused?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } })
      expect(asked?.body).toMatchObject({ max_tokens: 256, stream: true })
      expect(asked?.body).not.toHaveProperty("stream_options")
      expect(next?.body).not.toHaveProperty("stream_options")
      expect(rest).toEqual([])
    })))

  it.effect("streams asked at once of a server that refuses stream_options are each asked again without it", () =>
    withRealHttp(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const refusal = LoopbackHttp.gated(gate, Server.respond(422, { error: "Unrecognized request argument supplied: stream_options" }))
      const server = yield* Server.make((request) =>
        typeof request.body === "object" && request.body !== null && "stream_options" in request.body ? refusal : Server.streamedText("Each."))
      const brain = yield* OpenAi.make(settings(server.url, { retries: 0 }))
      const both = yield* Effect.forkChild(Effect.all([1, 2].map(() => Stream.runCollect(brain.stream!(request))), { concurrency: 2 }))
      yield* server.awaitRequests(2)
      yield* Deferred.succeed(gate, undefined)
      for (const all of yield* Fiber.join(both)) expect(answerOf(all).content).toEqual([{ type: "text", text: "Each." }])
      expect(yield* server.requests).toHaveLength(4)
    })))

  it.effect("a server that refuses both stream_options and max_tokens is asked without the one and with the other field", () =>
    withRealHttp(Effect.gen(function*() {
      const refusal = Server.respond(422, { error: "Unrecognized request argument supplied: stream_options" })
      const server = yield* Server.make(Server.refusing(["max_tokens"], (request) =>
        typeof request.body === "object" && request.body !== null && "stream_options" in request.body ? refusal : Server.streamedText("Both.")))
      expect(answerOf(yield* collect(settings(server.url, { retries: 0 }))).content).toEqual([{ type: "text", text: "Both." }])
      const sent = (yield* server.requests).map((each) => each.body)
      expect(sent.at(-1)).toMatchObject({ max_completion_tokens: 256, stream: true })
      expect(sent.at(-1)).not.toHaveProperty("stream_options")
      expect(sent).toHaveLength(3)
    })))

  it.effect("a stream the server cuts mid-way fails as a transient brain error, and is not asked again", () =>
    withRealHttp(Effect.gen(function*() {
      for (const end of ["drop", "end"] as const) {
        const server = yield* Server.make(Server.replies(events([chunk({ content: "Half an " })], end)))
        const { arrived, fiber } = yield* startStream(settings(server.url))
        const error = yield* Effect.flip(Fiber.join(fiber))
        expect(error.reason).toBe("timeout")
        expect(error.detail).toMatch(end === "drop" ? /^the answer broke off: / : /^the answer stream ended before the answer was complete$/)
        expect(yield* Queue.takeAll(arrived)).toEqual([{ _tag: "TextDelta", text: "Half an " }])
        expect(yield* server.requests).toHaveLength(1)
      }
    })))

  it.effect("a stream that closes right after its last chunk, without the blank line that ends it, is whole", () =>
    withRealHttp(Effect.gen(function*() {
      for (const ending of ["\n", ""]) {
        const server = yield* Server.make(Server.replies(events([
          chunk({ role: "assistant", content: "Done." }),
          `${chunk({}, "stop").trimEnd()}${ending}`
        ])))
        const answer = answerOf(yield* collect(settings(server.url)))
        expect(answer.content).toEqual([{ type: "text", text: "Done." }])
        expect(answer.stop_reason).toBe("end_turn")
      }
    })))

  it.effect("a stream cut inside its last chunk still fails as one that ended before its end", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(events([chunk({ content: "Half" }), chunk({ content: " more" }).slice(0, 40)])))
      const error = yield* Effect.flip(collect(settings(server.url)))
      expect(error).toMatchObject({ reason: "timeout", detail: "the answer stream ended before the answer was complete" })
    })))

  it.effect("an error the server puts in its stream fails the answer", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* Server.make(Server.replies(events([
        chunk({ content: "Sta" }),
        `data: ${JSON.stringify({ error: { message: "model crashed", type: "server_error" } })}\n\n`
      ])))
      const error = yield* Effect.flip(collect(settings(server.url)))
      expect(error.reason).toBe("timeout")
      expect(error.detail).toBe("the server broke off its answer with an error: model crashed")
    })))

  it.effect("keep-alives do not keep a stream alive: no more of the answer within the timeout fails it, whatever came", () =>
    withRealHttp(Effect.gen(function*() {
      const sixSeconds = yield* Deferred.make<void>()
      const nineSeconds = yield* Deferred.make<void>()
      const server = yield* Server.make(Server.replies(events(
        [chunk({ role: "assistant", content: "" }), chunk({ content: "Then " }), ...keepAlives, sixSeconds, ...keepAlives, nineSeconds, ...keepAlives],
        "hang"
      )))
      const { arrived, fiber } = yield* startStream(settings(server.url, { timeout: Duration.seconds(10) }))
      expect(yield* Queue.take(arrived)).toEqual({ _tag: "TextDelta", text: "Then " })
      yield* awaitPendingSleep(10_000)
      yield* TestClock.adjust(Duration.seconds(6))
      yield* Deferred.succeed(sixSeconds, undefined)
      yield* letArrive
      yield* TestClock.adjust(Duration.seconds(3))
      yield* Deferred.succeed(nineSeconds, undefined)
      yield* letArrive
      // 10 s after the last piece of the answer, 1 s after the last keep-alive.
      yield* advanceTo(10_000)
      const error = yield* failureOf(fiber)
      expect(error.reason).toBe("timeout")
      expect(error.detail).toBe(`no more of the answer from 127.0.0.1:${server.port} within 10s (the server sent only keep-alives)`)
      expect(yield* Queue.clear(arrived)).toEqual([])
      expect(yield* server.requests).toHaveLength(1)
      yield* server.hungUp(0)
    })))

  it.effect("reasoning, a tool call's pieces and the usage each count as the answer going on", () =>
    withRealHttp(Effect.gen(function*() {
      const gates = [yield* Deferred.make<void>(), yield* Deferred.make<void>(), yield* Deferred.make<void>()] as const
      const server = yield* Server.make(Server.replies(events([
        chunk({ role: "assistant", content: "" }),
        chunk({ content: "Let me check." }),
        ...keepAlives,
        gates[0],
        chunk({ content: null, reasoning_content: "The user wants weather." }),
        ...keepAlives,
        gates[1],
        chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "weather", arguments: "" } }] }),
        ...keepAlives,
        gates[2],
        chunk({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] }, "tool_calls"),
        usageChunk(),
        DONE
      ])))
      const { arrived, fiber } = yield* startStream(settings(server.url, { timeout: Duration.seconds(10) }))
      expect(yield* Queue.take(arrived)).toEqual({ _tag: "TextDelta", text: "Let me check." })
      yield* awaitPendingSleep(10_000)
      // Each piece comes 8 s after the one before: 24 s in all, never 10 s without the answer going on.
      for (const gate of gates) {
        yield* TestClock.adjust(Duration.seconds(8))
        expect(fiber.pollUnsafe()).toBeUndefined()
        yield* Deferred.succeed(gate, undefined)
        yield* letArrive
      }
      yield* Fiber.join(fiber)
      expect(answerOf(yield* Queue.clear(arrived)).content).toEqual([
        { type: "text", text: "Let me check." },
        { type: "tool_use", id: "call_1", name: "weather", input: {} }
      ])
    })))
})
