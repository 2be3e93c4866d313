/**
 * Request / answer over a FIFO pair: one request at a time, answers matched
 * by order (the wire carries no ids), late answers to timed-out requests
 * discarded.
 */
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type Frame, type FrameTooLarge, framed, makeBlockFramer } from "./Framing.js"
import { FifoError } from "./FifoPaths.js"
import { openReader, openWriter } from "./PipeEnd.js"

/** No answer came within the time given to one request. */
export class ExchangeTimeout extends Data.TaggedError("ExchangeTimeout")<{
  readonly message: string
}> {}

/** One request at a time on `requestPath`, one blank-line-terminated answer block on `answerPath`. */
export interface Exchange {
  readonly ask: (
    request: string,
    timeout: Duration.DurationInput
  ) => Effect.Effect<string, FrameTooLarge | ExchangeTimeout | FifoError>
}

/**
 * The wire carries no request ids, so answers are matched by order, and
 * requests are serialized. A request that timed out (or was interrupted)
 * still owes an answer: before the next request is written, owed answers are
 * awaited (up to that request's timeout) and discarded, so a late answer is
 * never handed to the wrong request. Answers that nobody asked for are
 * dropped with a warning.
 */
export const makeExchange = (options: {
  readonly requestPath: string
  readonly answerPath: string
  readonly maxAnswerBytes: number
}): Effect.Effect<Exchange, FifoError, Scope.Scope> =>
  Effect.gen(function*() {
    const writer = yield* openWriter(options.requestPath)
    const reader = yield* openReader(options.answerPath)
    const answers = yield* Queue.bounded<Frame>(16)
    const readerFailed = yield* Deferred.make<never, FifoError>()
    yield* reader.chunks.pipe(
      framed(() => makeBlockFramer(options.maxAnswerBytes)),
      Stream.runForEach((answer) => Queue.offer(answers, answer)),
      Effect.catchAll((error) => Deferred.fail(readerFailed, error)),
      Effect.forkScoped
    )
    const nextAnswer = Effect.raceFirst(Queue.take(answers), Deferred.await(readerFailed))
    const owed = yield* Ref.make(0)
    const lock = yield* Effect.makeSemaphore(1)

    const settleOwed = (timeout: Duration.DurationInput) =>
      Effect.gen(function*() {
        for (const _ of yield* Queue.takeAll(answers)) {
          const late = (yield* Ref.get(owed)) > 0
          yield* Ref.update(owed, (n) => Math.max(0, n - 1))
          yield* Effect.logWarning(
            late
              ? `discarded a late answer on ${options.answerPath} to a request that timed out`
              : `discarded an answer on ${options.answerPath} that no request was waiting for`
          )
        }
        while ((yield* Ref.get(owed)) > 0) {
          const late = yield* Effect.timeout(nextAnswer, timeout).pipe(Effect.option)
          if (late._tag === "None") {
            const missing = yield* Ref.getAndSet(owed, 0)
            yield* Effect.logWarning(
              `no answer on ${options.answerPath} to ${missing} request(s) that timed out; assuming they were dropped`
            )
          } else {
            yield* Ref.update(owed, (n) => n - 1)
            yield* Effect.logWarning(`discarded a late answer on ${options.answerPath} to a request that timed out`)
          }
        }
      })

    const ask: Exchange["ask"] = (request, timeout) =>
      lock.withPermits(1)(
        Effect.gen(function*() {
          yield* settleOwed(timeout)
          yield* Ref.update(owed, (n) => n + 1)
          const answer = yield* writer.write(request).pipe(
            Effect.tapError(() => Ref.update(owed, (n) => n - 1)),
            Effect.zipRight(nextAnswer),
            Effect.timeoutFail({
              duration: timeout,
              onTimeout: () => new ExchangeTimeout({ message: `no answer on ${options.answerPath} in time` })
            })
          )
          yield* Ref.update(owed, (n) => n - 1)
          return yield* answer
        })
      )
    return { ask }
  })
