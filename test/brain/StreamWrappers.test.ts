/**
 * What wraps a brain passes its stream on: serve's and the cluster's limit
 * on brain calls holds a permit until a stream ends, and a brain that
 * answers only whole stays so.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Queue, Semaphore, Stream } from "effect"
import { answerEvent, type BrainEvent, type BrainService, limitedBy, streamOf, tapAnswers, textDelta } from "../../src/ports/Brain.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"

const request = { model: "m", max_tokens: 10, messages: [{ role: "user" as const, content: "hi" }] }

describe("brain wrappers and streams", () => {
  it.effect("a limited brain holds its permit until the stream ends, not only until it starts", () =>
    Effect.gen(function*() {
      const rest = yield* Deferred.make<void>()
      const streaming: BrainService = {
        complete: () => Effect.succeed(ScriptedBrain.text("whole")),
        stream: () =>
          Stream.make(textDelta("first ")).pipe(
            Stream.concat(Stream.fromEffect(Effect.as(Deferred.await(rest), answerEvent(ScriptedBrain.text("first last")))))
          )
      }
      const limited = limitedBy(streaming, yield* Semaphore.make(1))
      const arrived = yield* Queue.unbounded<BrainEvent>()
      const streamed = yield* Effect.forkChild(Stream.runForEach(streamOf(limited, request), (event) => Queue.offer(arrived, event)))
      expect(yield* Queue.take(arrived)).toEqual(textDelta("first "))

      const second = yield* Effect.forkChild(limited.complete(request))
      yield* Effect.yieldNow
      // The stream still holds the one permit.
      expect(second.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(rest, undefined)
      yield* Fiber.join(streamed)
      expect((yield* Fiber.join(second)).content).toEqual([{ type: "text", text: "whole" }])
    }))

  it.effect("a brain that answers only whole stays so behind the wrappers, and its answers are still seen", () =>
    Effect.gen(function*() {
      const scripted = yield* ScriptedBrain.make([ScriptedBrain.text("one"), ScriptedBrain.text("two")])
      const seen: Array<string> = []
      const wrapped = tapAnswers(limitedBy(scripted.service, yield* Semaphore.make(1)), (_, __, response) =>
        Effect.sync(() => void seen.push(JSON.stringify(response.content))))
      expect(wrapped.stream).toBeUndefined()
      yield* wrapped.complete(request)
      expect(yield* Stream.runCollect(streamOf(wrapped, request))).toEqual([answerEvent(ScriptedBrain.text("two"))])
      expect(seen).toEqual(["[{\"type\":\"text\",\"text\":\"one\"}]", "[{\"type\":\"text\",\"text\":\"two\"}]"])
    }))
})
