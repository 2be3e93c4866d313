import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Queue, Redacted, Stream } from "effect"
import { type MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import { TestClock } from "effect/testing"
import * as BrainStreams from "../support/BrainStreams.js"
import { withRealHttp } from "../support/TestClockHttp.js"
import { advanceTo, awaitPendingSleep, letArrive } from "../support/TestClockWait.js"

const { blockEvents, events, messageEnd, messageStart, sse, streamEvents } = AnthropicServer

const request: MessagesRequest = {
  model: "claude-haiku-4-5-20251001",
  max_tokens: 1024,
  tools: [{
    name: "weather",
    description: "Current weather for a city",
    input_schema: { type: "object", properties: { city: { type: "string" } } },
    cache_control: { type: "ephemeral" }
  }],
  system: [{ type: "text", text: "You are terse.", cache_control: { type: "ephemeral" } }],
  messages: [{ role: "user", content: [{ type: "text", text: "Weather in Lyon?", cache_control: { type: "ephemeral" } }] }]
}

const settings = (baseUrl: string, overrides: Partial<Anthropic.AnthropicConfig> = {}): Anthropic.AnthropicConfig => ({
  apiKey: Redacted.make("test-key-not-secret"),
  baseUrl,
  timeout: Duration.seconds(60),
  retries: 4,
  debug: false,
  ...overrides
})

const startStream = (config: Anthropic.AnthropicConfig) => BrainStreams.startStream(Anthropic.make(config), request)

const collect = (config: Anthropic.AnthropicConfig) =>
  Effect.flatMap(Anthropic.make(config), (brain) => Stream.runCollect(brain.stream!(request)))

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

describe("Anthropic brain, streamed", () => {
  it.effect("asks for a stream with the same request and cache breakpoints, and passes text on before the answer ends", () =>
    withRealHttp(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const server = yield* AnthropicServer.make(AnthropicServer.replies(events([
        messageStart({ input_tokens: 12, output_tokens: 1, cache_creation_input_tokens: 300, cache_read_input_tokens: 2000 }),
        sse({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
        sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Sunny " } }),
        gate,
        sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "in Lyon." } }),
        sse({ type: "content_block_stop", index: 0 }),
        ...messageEnd("end_turn", { output_tokens: 9 })
      ])))
      const { arrived, fiber } = yield* startStream(settings(server.url))

      // The first piece of text is here while the server still holds the rest.
      expect(yield* Queue.take(arrived)).toEqual({ _tag: "TextDelta", text: "Sunny " })
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(fiber)
      const rest = yield* Queue.takeAll(arrived)
      expect(deltas(rest)).toEqual(["in Lyon."])
      expect(answerOf(rest)).toEqual({
        id: "msg_stream",
        type: "message",
        role: "assistant",
        model: "claude-test",
        content: [{ type: "text", text: "Sunny in Lyon." }],
        stop_reason: "end_turn",
        // The input counts of message_start; the output count of message_delta (a total, not an increment).
        usage: { input_tokens: 12, output_tokens: 9, cache_creation_input_tokens: 300, cache_read_input_tokens: 2000 }
      })

      const [received, ...others] = yield* server.requests
      expect(others).toEqual([])
      // The wire's one change: "stream": true after the request, its cache breakpoints as they were.
      expect(received?.rawBody).toBe(JSON.stringify({ ...request, stream: true }))
    })))

  it.effect("assembles tool calls from their JSON pieces, after the text written before them", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(events(streamEvents([
        { type: "text", pieces: ["Let me ", "check."] },
        { type: "tool_use", id: "toolu_1", name: "weather", input: { city: "Lyon", days: [1, 2] } },
        { type: "tool_use", id: "toolu_2", name: "clock", input: {} }
      ]))))
      const all = yield* collect(settings(server.url))
      expect(deltas(all)).toEqual(["Let me ", "check."])
      const answer = answerOf(all)
      expect(answer.stop_reason).toBe("tool_use")
      expect(answer.content).toEqual([
        { type: "text", text: "Let me check." },
        { type: "tool_use", id: "toolu_1", name: "weather", input: { city: "Lyon", days: [1, 2] } },
        { type: "tool_use", id: "toolu_2", name: "clock", input: {} }
      ])
    })))

  it.effect("a server that ignores stream and answers JSON is read as one answer, nothing lost", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.toolUse([
        { id: "toolu_1", name: "weather", input: { city: "Lyon" } }
      ])))
      const all = yield* collect(settings(server.url))
      expect(all).toHaveLength(1)
      expect(answerOf(all)).toEqual({
        id: "msg_test",
        type: "message",
        role: "assistant",
        model: "claude-test",
        content: [{ type: "text", text: "Let me check." }, { type: "tool_use", id: "toolu_1", name: "weather", input: { city: "Lyon" } }],
        stop_reason: "tool_use",
        usage: { input_tokens: 1, output_tokens: 1 }
      })
    })))

  it.effect("retries a 529 before the stream starts, and the text comes once", () =>
    withRealHttp(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(529, "overloaded_error", "Overloaded"),
        AnthropicServer.apiError(503, "api_error", "Service unavailable"),
        AnthropicServer.streamedText("Back ", "again.")
      ))
      const { arrived, fiber } = yield* startStream(settings(server.url))
      yield* server.awaitRequests(1)
      yield* advanceTo(1_000)
      yield* server.awaitRequests(2)
      yield* advanceTo(3_000)
      yield* Fiber.join(fiber)
      const all = yield* Queue.takeAll(arrived)
      expect(deltas(all)).toEqual(["Back ", "again."])
      expect(answerOf(all).content).toEqual([{ type: "text", text: "Back again." }])
      expect(yield* server.requests).toHaveLength(3)
    })))

  it.effect("a stream the server cuts mid-way fails as a transient brain error, and is not asked again", () =>
    withRealHttp(Effect.gen(function*() {
      const begun = [messageStart(), ...blockEvents({ type: "text", pieces: ["Half an "] }, 0).slice(0, 2)]
      for (const end of ["drop", "end"] as const) {
        const server = yield* AnthropicServer.make(AnthropicServer.replies(events(begun, end)))
        const { arrived, fiber } = yield* startStream(settings(server.url))
        const error = yield* Effect.flip(Fiber.join(fiber))
        expect(error.reason).toBe("timeout")
        expect(error.detail).toMatch(end === "drop" ? /^the answer broke off: / : /^the answer stream ended before the answer was complete$/)
        expect(yield* Queue.takeAll(arrived)).toEqual([{ _tag: "TextDelta", text: "Half an " }])
        expect(yield* server.requests).toHaveLength(1)
      }
    })))

  it.effect("a stream that closes right after its last event, without the blank line that ends it, is whole", () =>
    withRealHttp(Effect.gen(function*() {
      for (const ending of ["\n", ""]) {
        const all = streamEvents([{ type: "text", pieces: ["Done", "."] }])
        const last = all.length - 1
        all[last] = `${all[last]?.trimEnd()}${ending}`
        const server = yield* AnthropicServer.make(AnthropicServer.replies(events(all)))
        const answer = answerOf(yield* collect(settings(server.url)))
        expect(answer.content).toEqual([{ type: "text", text: "Done." }])
        expect(answer.stop_reason).toBe("end_turn")
      }
    })))

  it.effect("a stream cut inside its last event still fails as one that ended before its end", () =>
    withRealHttp(Effect.gen(function*() {
      const cut = sse({ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 7 } }).slice(0, 40)
      const server = yield* AnthropicServer.make(AnthropicServer.replies(events([
        messageStart(),
        ...blockEvents({ type: "text", pieces: ["Half"] }, 0),
        cut
      ])))
      const error = yield* Effect.flip(collect(settings(server.url)))
      expect(error).toMatchObject({ reason: "timeout", detail: "the answer stream ended before the answer was complete" })
    })))

  it.effect("an overloaded error in the stream is transient; an invalid request is fatal", () =>
    withRealHttp(Effect.gen(function*() {
      for (const [type, reason] of [["overloaded_error", "timeout"], ["invalid_request_error", "fatal"]] as const) {
        const server = yield* AnthropicServer.make(AnthropicServer.replies(events([
          messageStart(),
          sse({ type: "error", error: { type, message: "Something happened" } })
        ])))
        const error = yield* Effect.flip(collect(settings(server.url)))
        expect(error.reason).toBe(reason)
        expect(error.detail).toBe(`the API broke off its answer with an error: ${type}: Something happened`)
      }
    })))

  it.effect("a stream whose pieces each come within the timeout is read to its end, however long it lasts", () =>
    withRealHttp(Effect.gen(function*() {
      const second = yield* Deferred.make<void>()
      const third = yield* Deferred.make<void>()
      const [start, one, two, three, stop] = blockEvents({ type: "text", pieces: ["One, ", "two, ", "three."] }, 0)
      const server = yield* AnthropicServer.make(AnthropicServer.replies(events([
        messageStart(), start!, one!, second, two!, third, three!, stop!, ...messageEnd("end_turn")
      ])))
      const { arrived, fiber } = yield* startStream(settings(server.url, { timeout: Duration.seconds(10) }))
      expect(yield* Queue.take(arrived)).toEqual({ _tag: "TextDelta", text: "One, " })
      yield* awaitPendingSleep(10_000)
      yield* TestClock.adjust(Duration.seconds(6))
      yield* Deferred.succeed(second, undefined)
      expect(yield* Queue.take(arrived)).toEqual({ _tag: "TextDelta", text: "two, " })
      // 12 s after the answer began, 6 s after its last piece: not silent for the timeout.
      yield* TestClock.adjust(Duration.seconds(6))
      yield* letArrive
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(third, undefined)
      yield* Fiber.join(fiber)
      const rest = yield* Queue.takeAll(arrived)
      expect(deltas(rest)).toEqual(["three."])
      expect(answerOf(rest).content).toEqual([{ type: "text", text: "One, two, three." }])
    })))

  it.effect("a stream that falls silent for the timeout fails as a transient brain error", () =>
    withRealHttp(Effect.gen(function*() {
      const begun = [messageStart(), ...blockEvents({ type: "text", pieces: ["Then "] }, 0).slice(0, 2)]
      const server = yield* AnthropicServer.make(AnthropicServer.replies(events(begun, "hang")))
      const { arrived, fiber } = yield* startStream(settings(server.url, { timeout: Duration.seconds(10) }))
      // The answer has begun: the only timer left is the wait for its next piece.
      expect(yield* Queue.take(arrived)).toEqual({ _tag: "TextDelta", text: "Then " })
      yield* advanceTo(10_000)
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error.reason).toBe("timeout")
      expect(error.detail).toBe("no more of the answer within 10s")
      expect(yield* server.requests).toHaveLength(1)
      // The request is ended, not left holding a connection.
      yield* server.hungUp(0)
    })))

  it.effect("pings do not keep a stream alive: no more of the answer within the timeout fails it, whatever pings came", () =>
    withRealHttp(Effect.gen(function*() {
      const sixSeconds = yield* Deferred.make<void>()
      const nineSeconds = yield* Deferred.make<void>()
      const ping = sse({ type: "ping" })
      const begun = [messageStart(), ...blockEvents({ type: "text", pieces: ["Then "] }, 0).slice(0, 2)]
      const server = yield* AnthropicServer.make(AnthropicServer.replies(events(
        [...begun, ping, sixSeconds, ping, ping, nineSeconds, ping],
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
      // 10 s after the last piece of the answer, 1 s after the last ping.
      yield* advanceTo(10_000)
      const error = yield* failureOf(fiber)
      expect(error.reason).toBe("timeout")
      expect(error.detail).toBe("no more of the answer within 10s (the server sent only keep-alives)")
      expect(yield* Queue.clear(arrived)).toEqual([])
      expect(yield* server.requests).toHaveLength(1)
      yield* server.hungUp(0)
    })))

  it.effect("a stream of pings alone, not one event of the answer, fails at the timeout", () =>
    withRealHttp(Effect.gen(function*() {
      const headers = yield* Deferred.make<void>()
      const later = yield* Deferred.make<void>()
      const ping = sse({ type: "ping" })
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.gated(headers, events([ping, ping, later, ping], "hang"))
      ))
      const { arrived, fiber } = yield* startStream(settings(server.url, { timeout: Duration.seconds(10) }))
      yield* server.awaitRequests(1)
      // The answer begins at 2 s, so its wait (until 12 s) is told from the exchange's own (until 10 s).
      yield* TestClock.adjust(Duration.seconds(2))
      yield* Deferred.succeed(headers, undefined)
      yield* awaitPendingSleep(12_000)
      yield* TestClock.adjust(Duration.seconds(8))
      yield* Deferred.succeed(later, undefined)
      yield* letArrive
      yield* advanceTo(12_000)
      const error = yield* failureOf(fiber)
      expect(error.reason).toBe("timeout")
      expect(error.detail).toBe("no more of the answer within 10s (the server sent only keep-alives)")
      expect(yield* Queue.clear(arrived)).toEqual([])
      yield* server.hungUp(0)
    })))

  it.effect("a stream left before its end hangs up its request", () =>
    withRealHttp(Effect.gen(function*() {
      const rest = yield* Deferred.make<void>()
      const [start, one, two, stop] = blockEvents({ type: "text", pieces: ["One, ", "two."] }, 0)
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        events([messageStart(), start!, one!, rest, two!, stop!, ...messageEnd("end_turn")]),
        events([messageStart(), ...blockEvents({ type: "text", pieces: ["Whole."] }, 0), ...messageEnd("end_turn")])
      ))
      const brain = yield* Anthropic.make(settings(server.url))
      const first = yield* Stream.runCollect(Stream.take(brain.stream!(request), 1))
      expect(deltas(first)).toEqual(["One, "])
      yield* server.hungUp(0)
      // The next answer is read whole as ever.
      const whole = yield* Stream.runCollect(brain.stream!(request))
      expect(answerOf(whole).content).toEqual([{ type: "text", text: "Whole." }])
      expect(yield* server.requests).toHaveLength(2)
    })))
})
