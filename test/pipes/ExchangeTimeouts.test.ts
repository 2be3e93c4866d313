/**
 * The exchange's timeouts on Effect's Clock: a request times out once its
 * own timeout has passed from when it went out, never before, never for one
 * answered in time or given up, and a request behind one that timed out or
 * was interrupted waits for the owed answer up to its own timeout, counted
 * from when its turn came.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Fiber, Queue } from "effect"
import { TestClock } from "effect/testing"
import { makeExchange } from "../../src/pipes/Exchange.js"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { blocksFrom, mkfifo, tempDir } from "../support/FifoKit.js"
import { captureLogs } from "../support/LogCapture.js"
import { awaitPendingSleep, yieldToEventLoop } from "../support/TestClockWait.js"

// The far end played by hand, as in Exchange.test.ts.
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
  /** No request reached the far end: the event loop ran a few times and the pipe gave nothing. */
  const nothingSent = Effect.gen(function*() {
    for (let i = 0; i < 5; i++) yield* yieldToEventLoop
    expect(yield* Queue.size(requests)).toBe(0)
  })
  return { exchange, requests, logs, nothingSent, answer: (text: string) => answers.write(`${text}\n\n`) }
})

describe("Exchange timeouts", () => {
  it.effect("a request answered in time is never timed out: the clock moving on past its timeout changes nothing", () =>
    Effect.gen(function*() {
      const { answer, exchange, logs, requests } = yield* withPeer
      const asked = yield* Effect.forkChild(exchange.ask("q\n\n", "10 seconds"))
      expect(yield* Queue.take(requests)).toBe("q")
      yield* answer("in time")
      expect(yield* Fiber.join(asked)).toBe("in time")
      yield* TestClock.adjust("1 minute")
      // Nothing is owed: the next request goes out at once and takes the next answer.
      const next = yield* Effect.forkChild(exchange.ask("r\n\n", "10 seconds"))
      expect(yield* Queue.take(requests)).toBe("r")
      yield* answer("next")
      expect(yield* Fiber.join(next)).toBe("next")
      expect(logs.lines).toEqual([])
    }))

  it.effect("a request's timeout runs from when it goes out, not from an earlier request's", () =>
    Effect.gen(function*() {
      const { answer, exchange, requests } = yield* withPeer
      const first = yield* Effect.forkChild(exchange.ask("first\n\n", "10 seconds"))
      expect(yield* Queue.take(requests)).toBe("first")
      yield* answer("one")
      expect(yield* Fiber.join(first)).toBe("one")
      yield* TestClock.adjust("5 seconds")
      const second = yield* Effect.forkChild(exchange.ask("second\n\n", "10 seconds"))
      expect(yield* Queue.take(requests)).toBe("second")
      // Past the first request's timeout (at 10 s), not the second's (at 15 s).
      yield* TestClock.adjust("9 seconds")
      yield* awaitPendingSleep(15_000)
      expect(second.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 second")
      expect((yield* Effect.flip(Fiber.join(second)))._tag).toBe("ExchangeTimeout")
    }))

  it.effect("behind an interrupted request with a long timeout, the next waits for the owed answer only its own, shorter, timeout", () =>
    Effect.gen(function*() {
      const { answer, exchange, logs, nothingSent, requests } = yield* withPeer
      const first = yield* Effect.forkChild(exchange.ask("first\n\n", "60 seconds"))
      expect(yield* Queue.take(requests)).toBe("first")
      yield* Fiber.interrupt(first)
      const second = yield* Effect.forkChild(exchange.ask("second\n\n", "10 seconds"))
      yield* awaitPendingSleep(10_000)
      yield* nothingSent
      yield* TestClock.adjust("10 seconds")
      expect(yield* logs.take).toMatch(/^WARN no answer on .*out to 1 request\(s\) that timed out; assuming they were dropped$/)
      expect(yield* Queue.take(requests)).toBe("second")
      yield* answer("answer to second")
      expect(yield* Fiber.join(second)).toBe("answer to second")
    }))

  it.effect("a request queued behind one that times out gets its own timeout once its turn comes, for the owed answer, then for its own", () =>
    Effect.gen(function*() {
      const { answer, exchange, logs, nothingSent, requests } = yield* withPeer
      const first = yield* Effect.forkChild(exchange.ask("first\n\n", "10 seconds"))
      const second = yield* Effect.forkChild(exchange.ask("second\n\n", "10 seconds"))
      expect(yield* Queue.take(requests)).toBe("first")
      yield* awaitPendingSleep(10_000)
      yield* TestClock.adjust("10 seconds")
      expect((yield* Effect.flip(Fiber.join(first)))._tag).toBe("ExchangeTimeout")
      // The second's turn came at 10 s: it waits for the first's answer until 20 s.
      yield* awaitPendingSleep(20_000)
      yield* nothingSent
      yield* TestClock.adjust("10 seconds")
      expect(yield* logs.take).toMatch(/assuming they were dropped$/)
      expect(yield* Queue.take(requests)).toBe("second")
      // Its own answer: until 30 s.
      yield* awaitPendingSleep(30_000)
      yield* TestClock.adjust("9 seconds")
      expect(second.pollUnsafe()).toBeUndefined()
      yield* answer("answer to second")
      expect(yield* Fiber.join(second)).toBe("answer to second")
    }))

  it.effect("a request interrupted while it waits times nothing out when its timeout passes", () =>
    Effect.gen(function*() {
      const { answer, exchange, logs, requests } = yield* withPeer
      const first = yield* Effect.forkChild(exchange.ask("first\n\n", "10 seconds"))
      expect(yield* Queue.take(requests)).toBe("first")
      yield* Fiber.interrupt(first)
      yield* answer("late answer to first")
      expect(yield* logs.take).toMatch(/^WARN discarded a late answer on .*out to a request that timed out$/)
      yield* TestClock.adjust("1 minute")
      // Nothing is owed and nothing timed out: the next request goes out at once and takes its answer.
      const second = yield* Effect.forkChild(exchange.ask("second\n\n", "10 seconds"))
      expect(yield* Queue.take(requests)).toBe("second")
      yield* answer("answer to second")
      expect(yield* Fiber.join(second)).toBe("answer to second")
      expect(logs.lines).toHaveLength(1)
    }))
})
