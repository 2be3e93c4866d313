import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Fiber, TestClock } from "effect"
import { makeExchange } from "../../src/fifo/Exchange.js"
import { openWriter } from "../../src/fifo/PipeEnd.js"
import { awaitPendingSleep, blocksFrom, mkfifo, tempDir } from "../support/FifoKit.js"

// The far end played by hand: requests read as blocks, answers written when the test says.
const withPeer = Effect.gen(function*() {
  const dir = yield* tempDir
  const requestPath = path.join(dir, "in")
  const answerPath = path.join(dir, "out")
  yield* mkfifo(requestPath)
  yield* mkfifo(answerPath)
  const exchange = yield* makeExchange({ requestPath, answerPath, maxAnswerBytes: 64 })
  const requests = yield* blocksFrom(requestPath)
  const answers = yield* openWriter(answerPath)
  return { exchange, requests, answer: (text: string) => answers.write(`${text}\n\n`) }
})

describe("Exchange", () => {
  it.scoped("skips the answer owed to an interrupted request", () =>
    Effect.gen(function*() {
      const { answer, exchange, requests } = yield* withPeer
      const first = yield* Effect.fork(exchange.ask("first\n\n", "30 seconds"))
      expect(yield* requests.take).toBe("first")
      yield* Fiber.interrupt(first)
      const second = yield* Effect.fork(exchange.ask("second\n\n", "30 seconds"))
      yield* answer("late answer to first")
      expect(yield* requests.take).toBe("second")
      yield* answer("answer to second")
      expect(yield* Fiber.join(second)).toBe("answer to second")
    }))

  it.scoped("drops an answer nobody asked for, and gives an oversized one to its request as FrameTooLarge", () =>
    Effect.gen(function*() {
      const { answer, exchange, requests } = yield* withPeer
      yield* answer("unasked")
      // Let the unasked answer arrive before the request: it must not be taken as its answer.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
      const asked = yield* Effect.fork(exchange.ask("q\n\n", "30 seconds"))
      expect(yield* requests.take).toBe("q")
      yield* answer("x".repeat(100))
      expect((yield* Effect.flip(Fiber.join(asked)))._tag).toBe("FrameTooLarge")
      const next = yield* Effect.fork(exchange.ask("r\n\n", "30 seconds"))
      expect(yield* requests.take).toBe("r")
      yield* answer("fine")
      expect(yield* Fiber.join(next)).toBe("fine")
    }))

  it.scoped("times a request out by the clock, not before", () =>
    Effect.gen(function*() {
      const { exchange, requests } = yield* withPeer
      const asked = yield* Effect.fork(exchange.ask("q\n\n", "10 seconds"))
      expect(yield* requests.take).toBe("q")
      yield* awaitPendingSleep
      yield* TestClock.adjust("9 seconds")
      expect(asked.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 second")
      expect((yield* Effect.flip(Fiber.join(asked)))._tag).toBe("ExchangeTimeout")
    }))
})
