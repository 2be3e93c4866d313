import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Fiber, TestClock } from "effect"
import { makeExchange } from "../../src/fifo/Exchange.js"
import { openWriter } from "../../src/fifo/PipeEnd.js"
import { blocksFrom, mkfifo, tempDir } from "../support/FifoKit.js"
import { captureLogs } from "../support/LogCapture.js"
import { awaitPendingSleep } from "../support/TestClockWait.js"

// The far end played by hand: requests read as blocks, answers written when the test says.
// The exchange's log lines are captured in `logs`.
const withPeer = Effect.gen(function*() {
  const dir = yield* tempDir
  const requestPath = path.join(dir, "in")
  const answerPath = path.join(dir, "out")
  yield* mkfifo(requestPath)
  yield* mkfifo(answerPath)
  const logs = yield* captureLogs
  const exchange = yield* makeExchange({ requestPath, answerPath, maxAnswerBytes: 64 }).pipe(Effect.provide(logs.layer))
  const requests = yield* blocksFrom(requestPath)
  const answers = yield* openWriter(answerPath)
  return { exchange, requests, logs, answer: (text: string) => answers.write(`${text}\n\n`) }
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
      const { answer, exchange, logs, requests } = yield* withPeer
      yield* answer("unasked")
      // The unasked answer arrives before the request, and is dropped: it must not be taken as its answer.
      expect(yield* logs.take).toMatch(/^WARN discarded an answer on .*out that no request was waiting for$/)
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
      yield* awaitPendingSleep(10_000)
      yield* TestClock.adjust("9 seconds")
      expect(asked.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 second")
      expect((yield* Effect.flip(Fiber.join(asked)))._tag).toBe("ExchangeTimeout")
    }))
})
