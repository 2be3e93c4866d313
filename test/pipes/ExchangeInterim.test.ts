/**
 * Interim frames on an exchange (a brain bridge's stream events, its
 * hello): handed to the request in flight as they come, never taken for an
 * answer; those of a request given up (a cancelled turn) are dropped with
 * its late answer, so the next request gets neither.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Fiber, Queue } from "effect"
import { makeExchange } from "../../src/pipes/Exchange.js"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { blocksFrom, mkfifo, tempDir } from "../support/FifoKit.js"

const withPeer = Effect.gen(function*() {
  const dir = yield* tempDir
  const requestPath = path.join(dir, "in")
  const answerPath = path.join(dir, "out")
  yield* mkfifo(requestPath)
  yield* mkfifo(answerPath)
  const exchange = yield* makeExchange({
    requestPath,
    answerPath,
    maxAnswerBytes: 1024,
    interim: (frame) => frame.startsWith("event ")
  })
  const requests = yield* blocksFrom(requestPath)
  const answers = yield* openWriter(answerPath)
  return { exchange, requests, answer: (text: string) => answers.write(`${text}\n\n`) }
})

describe("Exchange with interim frames", () => {
  it.effect("gives the request in flight its interim frames in order, and its answer", () =>
    Effect.gen(function*() {
      const { answer, exchange, requests } = yield* withPeer
      const seen: Array<string> = []
      const asked = yield* Effect.forkChild(exchange.ask("q\n\n", "30 seconds", (frame) => void seen.push(frame)))
      expect(yield* Queue.take(requests)).toBe("q")
      yield* answer("event 1")
      yield* answer("event 2")
      yield* answer("the answer")
      expect(yield* Fiber.join(asked)).toBe("the answer")
      expect(seen).toEqual(["event 1", "event 2"])
    }))

  it.effect("drops the interim frames of a request given up, and its late answer; the next request gets its own", () =>
    Effect.gen(function*() {
      const { answer, exchange, requests } = yield* withPeer
      const firstSeen: Array<string> = []
      const first = yield* Effect.forkChild(exchange.ask("first\n\n", "30 seconds", (frame) => void firstSeen.push(frame)))
      expect(yield* Queue.take(requests)).toBe("first")
      yield* answer("event a")
      yield* Fiber.interrupt(first)
      const secondSeen: Array<string> = []
      const second = yield* Effect.forkChild(exchange.ask("second\n\n", "30 seconds", (frame) => void secondSeen.push(frame)))
      yield* answer("event b")
      yield* answer("late answer to first")
      expect(yield* Queue.take(requests)).toBe("second")
      yield* answer("event c")
      yield* answer("answer to second")
      expect(yield* Fiber.join(second)).toBe("answer to second")
      expect(secondSeen).toEqual(["event c"])
    }))

  it.effect("an interim frame with no request waiting is no answer: the next request is not answered by it", () =>
    Effect.gen(function*() {
      const { answer, exchange, requests } = yield* withPeer
      yield* answer("event hello")
      const asked = yield* Effect.forkChild(exchange.ask("q\n\n", "30 seconds"))
      expect(yield* Queue.take(requests)).toBe("q")
      yield* answer("real")
      expect(yield* Fiber.join(asked)).toBe("real")
    }))
})
