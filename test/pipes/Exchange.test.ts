import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Fiber, Queue, Result } from "effect"
import { TestClock } from "effect/testing"
import { makeExchange } from "../../src/pipes/Exchange.js"
import { openWriter, takeUnread } from "../../src/pipes/PipeEnd.js"
import { blocksFrom, mkfifo, tempDir } from "../support/FifoKit.js"
import { captureLogs } from "../support/LogCapture.js"
import { awaitPendingSleep } from "../support/TestClockWait.js"

/** The two FIFOs of an exchange, and its log lines captured. */
const pipes = Effect.gen(function*() {
  const dir = yield* tempDir
  const requestPath = path.join(dir, "in")
  const answerPath = path.join(dir, "out")
  yield* mkfifo(requestPath)
  yield* mkfifo(answerPath)
  return { requestPath, answerPath, logs: yield* captureLogs }
})

// The far end played by hand: requests read as blocks, answers written when the test says.
// The exchange's log lines are captured in `logs`.
const withPeer = Effect.gen(function*() {
  const { answerPath, logs, requestPath } = yield* pipes
  const exchange = yield* makeExchange({ requestPath, answerPath, maxAnswerBytes: 64 }).pipe(Effect.provide(logs.layer))
  const requests = yield* blocksFrom(requestPath)
  const answers = yield* openWriter(answerPath)
  return { exchange, requests, logs, answer: (text: string) => answers.write(`${text}\n\n`) }
})

describe("Exchange", () => {
  it.effect("skips the answer owed to an interrupted request", () =>
    Effect.gen(function*() {
      const { answer, exchange, requests } = yield* withPeer
      const first = yield* Effect.forkChild(exchange.ask("first\n\n", "30 seconds"))
      expect(yield* Queue.take(requests)).toBe("first")
      yield* Fiber.interrupt(first)
      const second = yield* Effect.forkChild(exchange.ask("second\n\n", "30 seconds"))
      yield* answer("late answer to first")
      expect(yield* Queue.take(requests)).toBe("second")
      yield* answer("answer to second")
      expect(yield* Fiber.join(second)).toBe("answer to second")
    }))

  it.effect("drops an answer nobody asked for, and gives an oversized one to its request as FrameTooLarge", () =>
    Effect.gen(function*() {
      const { answer, exchange, logs, requests } = yield* withPeer
      yield* answer("unasked")
      // The unasked answer arrives before the request, and is dropped: it must not be taken as its answer.
      expect(yield* logs.take).toMatch(/^WARN discarded an answer on .*out that no request was waiting for$/)
      const asked = yield* Effect.forkChild(exchange.ask("q\n\n", "30 seconds"))
      expect(yield* Queue.take(requests)).toBe("q")
      yield* answer("x".repeat(100))
      expect((yield* Effect.flip(Fiber.join(asked)))._tag).toBe("FrameTooLarge")
      const next = yield* Effect.forkChild(exchange.ask("r\n\n", "30 seconds"))
      expect(yield* Queue.take(requests)).toBe("r")
      yield* answer("fine")
      expect(yield* Fiber.join(next)).toBe("fine")
    }))

  it.effect("times a request out by the clock, not before", () =>
    Effect.gen(function*() {
      const { exchange, requests } = yield* withPeer
      const asked = yield* Effect.forkChild(exchange.ask("q\n\n", "10 seconds"))
      expect(yield* Queue.take(requests)).toBe("q")
      yield* awaitPendingSleep(10_000)
      yield* TestClock.adjust("9 seconds")
      expect(asked.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 second")
      expect((yield* Effect.flip(Fiber.join(asked)))._tag).toBe("ExchangeTimeout")
    }))
})

// A far end whose process can die: it reads only when the test says, and its death runs what the exchange registered.
const withMortalPeer = Effect.gen(function*() {
  const { answerPath, logs, requestPath } = yield* pipes
  let onExit: Effect.Effect<void> = Effect.void
  const exchange = yield* makeExchange({
    requestPath,
    answerPath,
    maxAnswerBytes: 64,
    farEndExits: (registered) => Effect.sync(() => void (onExit = registered))
  }).pipe(Effect.provide(logs.layer))
  const utf8 = new TextDecoder()
  return {
    exchange,
    logs,
    /** What the far end reads now: every byte waiting in the request pipe. */
    readNow: () => utf8.decode(Result.getOrThrow(takeUnread(requestPath))),
    /** Writes an answer into the pipe from a descriptor of the far end's own; our socket has not read it yet. */
    answerNow: (text: string) => {
      const fd = fs.openSync(answerPath, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)
      fs.writeSync(fd, `${text}\n\n`)
      fs.closeSync(fd)
    },
    dies: () => Effect.runSync(onExit),
    requestPath
  }
})

describe("Exchange, when the far end's process exits", () => {
  it.effect("an answer it wrote before it died still reaches its request", () =>
    Effect.gen(function*() {
      const { answerNow, dies, exchange, readNow } = yield* withMortalPeer
      const asked = yield* Effect.forkChild(exchange.ask("q\n\n", "30 seconds"))
      yield* Effect.yieldNow
      expect(readNow()).toBe("q\n\n")
      // Written and dead in one go: the answer is in the pipe, unread, when the exit is heard.
      yield* Effect.sync(() => {
        answerNow("the answer")
        dies()
      })
      expect(yield* Fiber.join(asked)).toBe("the answer")
    }))

  it.effect("a request it read and never answered fails at once, and the next one is answered without waiting", () =>
    Effect.gen(function*() {
      const { dies, exchange, logs, readNow } = yield* withMortalPeer
      const first = yield* Effect.forkChild(exchange.ask("first\n\n", "30 seconds"))
      yield* Effect.yieldNow
      expect(readNow()).toBe("first\n\n")
      yield* Effect.sync(dies)
      const failed = yield* Effect.flip(Fiber.join(first))
      expect(failed._tag).toBe("FarEndExited")
      expect(failed.message).toMatch(/^the bridge on .*out exited before it answered$/)
      expect(yield* logs.take).toMatch(/^WARN the bridge on .*out exited owing 1 answer\(s\)/)
      // Nothing is owed any more: the second request goes out at once and takes the next answer.
      yield* Effect.forkChild(exchange.ask("second\n\n", "30 seconds"))
      yield* Effect.yieldNow
      expect(readNow()).toBe("second\n\n")
    }))

  it.effect("requests it left unread, even one too big for the pipe, are dropped: the restarted far end reads only new ones", () =>
    Effect.gen(function*() {
      const { dies, exchange, readNow, requestPath } = yield* withMortalPeer
      // Four times what a pipe holds: most of it waits in our socket when the far end dies.
      const big = yield* Effect.forkChild(exchange.ask(`${"x".repeat(256 * 1024)}\n\n`, "30 seconds"))
      yield* Effect.yieldNow
      expect(readNow().length).toBeGreaterThan(0)
      yield* Effect.sync(dies)
      expect((yield* Effect.flip(Fiber.join(big)))._tag).toBe("FarEndExited")
      const requests = yield* blocksFrom(requestPath)
      yield* Effect.forkChild(exchange.ask("next\n\n", "30 seconds"))
      expect(yield* Queue.take(requests)).toBe("next")
    }))

  it.effect("a request waiting for a timed-out one's answer goes out at once", () =>
    Effect.gen(function*() {
      const { dies, exchange, readNow } = yield* withMortalPeer
      const first = yield* Effect.forkChild(exchange.ask("first\n\n", "10 seconds"))
      yield* awaitPendingSleep(10_000)
      expect(readNow()).toBe("first\n\n")
      yield* TestClock.adjust("10 seconds")
      expect((yield* Effect.flip(Fiber.join(first)))._tag).toBe("ExchangeTimeout")
      // The second waits for the answer the first still owes …
      yield* Effect.forkChild(exchange.ask("second\n\n", "10 seconds"))
      yield* Effect.yieldNow
      expect(readNow()).toBe("")
      // … until the far end dies owing it.
      yield* Effect.sync(dies)
      yield* Effect.yieldNow
      expect(readNow()).toBe("second\n\n")
    }))
})
