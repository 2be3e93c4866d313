/**
 * Request / answer over a FIFO pair: one request at a time, answers matched
 * by order (the wire carries no ids), late answers to timed-out requests
 * discarded.
 *
 * Effect's own pieces: a Semaphore lets one request on the wire at a time,
 * in the order they were asked; the request in flight waits on a Deferred,
 * which the answer completes as the framer cuts it from the socket's data
 * events. Its timeout is our Deadline (one watchdog fiber per exchange on
 * Effect's Clock, so a TestClock drives it), not a timer per request: see
 * Deadline.ts for what `Effect.timeoutOrElse` or a sleeping fiber per
 * request cost a turn.
 */
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import type { AbandonRequests } from "./Abandon.js"
import { makeDeadline } from "./Deadline.js"
import { type FrameTooLarge, makeBlockFramer } from "../runtime/Framing.js"
import { type FifoError } from "./FifoPaths.js"
import { listenReader, openWriter, takeUnread } from "./PipeEnd.js"

/** No answer came within the time given to one request. */
export class ExchangeTimeout extends Data.TaggedError("ExchangeTimeout")<{
  readonly message: string
}> {}

/**
 * The process serving the far end exited before it answered (an executable
 * bridge that crashed): the request in flight will get no answer, and was
 * dropped. Asking again reaches the restarted bridge.
 */
export class FarEndExited extends Data.TaggedError("FarEndExited")<{
  readonly message: string
}> {}

/**
 * How an exchange hears that the process on its far end exited: `onExit`
 * is registered for the life of the scope and run after each exit, before
 * a restart (Bridges gives this for an executable bridge of the same run).
 */
export type FarEndExits = (onExit: Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>

/** One request at a time on `requestPath`, one blank-line-terminated answer block on `answerPath`. */
export interface Exchange {
  readonly ask: (
    request: string,
    timeout: Duration.Input,
    /** Given each interim frame (see `interim`) that comes for this request before its answer. */
    onInterim?: (frame: string) => void
  ) => Effect.Effect<string, AskError>
  /** Answers still due: the request in flight and those that timed out with their answer not come yet. */
  readonly unanswered: () => number
}

export type AskError = FrameTooLarge | ExchangeTimeout | FarEndExited | FifoError

const isFarEndExited = (error: AskError) => error._tag === "FarEndExited"

/**
 * `ask`, sent once more if the far end's process exited holding it: for a
 * request the restarted bridge may answer anew (a brain request, a tool
 * listing). A second exit fails with FarEndExited.
 */
export const askOnceMore = (exchange: Exchange, request: string, timeout: Duration.Input) =>
  Effect.catchIf(exchange.ask(request, timeout), isFarEndExited, () => exchange.ask(request, timeout))

/** Whether an ask failed because the far end's process exited holding the request. */
export const farEndExited = isFarEndExited


/**
 * The wire carries no request ids, so answers are matched by order, and
 * requests are serialized (a Semaphore of one permit; only its holder is on
 * the wire). A request that timed out (or was interrupted) still owes an
 * answer: before the next request is written, owed answers are awaited (up
 * to that request's timeout, afresh after each one that comes) and
 * discarded, so a late answer is never handed to the wrong request. Owed
 * answers that do not come in that time are assumed lost, and their
 * requests still unread in the pipe are taken out of it: a bridge that comes
 * later must not run them and hand their answers to the request then
 * waiting. Answers that nobody asked for are dropped with a warning as they arrive. When the
 * answer pipe breaks, the request in flight and every later one fail with
 * its error.
 *
 * When the far end's process exits (`farEndExits`), what it wrote before
 * it died is still taken as answers, in order; then nothing more is owed:
 * the requests it read or left unread are dropped (a restarted bridge must
 * not answer them as if they were new), and the request in flight fails
 * with FarEndExited at once instead of waiting out its timeout.
 */
export const makeExchange = (options: {
  readonly requestPath: string
  readonly answerPath: string
  readonly maxAnswerBytes: number
  readonly farEndExits?: FarEndExits
  /** Told of a request interrupted before its answer came (a cancelled turn), by its number on the wire (see Abandon). */
  readonly abandon?: AbandonRequests
  /**
   * Frames that are no answer (a brain bridge's stream events and its
   * hello, see BrainFrame): shown every frame as it comes, true for one that
   * is interim. Such a frame is handed to the request in flight, if any,
   * and never counted as an answer; one for a request given up is dropped.
   */
  readonly interim?: (frame: string) => boolean
}): Effect.Effect<Exchange, FifoError, Scope.Scope> =>
  Effect.gen(function*() {
    // Warnings start from the reader's callbacks: with the builder's runtime, they see its logger.
    const fork = Effect.runForkWith(yield* Effect.context<never>())
    const warn = (message: string) => void fork(Effect.logWarning(message))
    const where = options.answerPath

    // One request on the wire at a time, taken in the order they were asked.
    const onTheWire = yield* Semaphore.make(1)
    /**
     * Answers still due: counted from the moment a request is sent, and kept
     * when it times out or is interrupted (its answer must then be skipped).
     */
    let owed = 0
    /** The answer of the request in flight, while its asker waits for it. */
    let inFlight: Deferred.Deferred<string, AskError> | undefined
    /** Where the request in flight takes its interim frames. */
    let inFlightInterim: ((frame: string) => void) | undefined
    const interim = options.interim
    /** Completed when an owed answer is settled (came late, or will never come), for a request waiting to go out. */
    let settled: Deferred.Deferred<boolean> | undefined
    let broken: FifoError | undefined
    /** Requests written so far: the number of the last one on the wire. */
    let written = 0
    /** Owed answers of requests given up on purpose (Abandon), discarded without a warning. */
    let givenUp = 0

    const wakeSettling = () => {
      const waiting = settled
      settled = undefined
      if (waiting !== undefined) Deferred.doneUnsafe(waiting, Exit.succeed(true))
    }
    /** Ends the request in flight with `outcome` (its asker resumes); nothing more is owed for it. */
    const answer = (outcome: Exit.Exit<string, AskError>) => {
      const asker = inFlight
      inFlight = undefined
      inFlightInterim = undefined
      if (asker !== undefined) Deferred.doneUnsafe(asker, outcome)
    }

    const onFrame = (frame: Result.Result<string, FrameTooLarge>) => {
      if (interim !== undefined && Result.isSuccess(frame) && interim(frame.success)) {
        // Only the request in flight (no older answer owed) takes it: one given up has no one to show it to.
        if (inFlight !== undefined && owed === 1) inFlightInterim?.(frame.success)
        return
      }
      if (inFlight !== undefined && owed === 1) {
        // The answer to the request in flight (no older one is owed).
        owed = 0
        return answer(Result.isSuccess(frame) ? Exit.succeed(frame.success) : Exit.fail(frame.failure))
      }
      if (owed === 0) return warn(`discarded an answer on ${where} that no request was waiting for`)
      owed -= 1
      // The answer to a request given up on purpose (a cancelled turn) is expected: nothing to warn of.
      if (givenUp > 0) givenUp -= 1
      else warn(`discarded a late answer on ${where} to a request that timed out`)
      wakeSettling()
    }

    let framer = makeBlockFramer(options.maxAnswerBytes)
    const writer = yield* openWriter(options.requestPath)

    /**
     * Takes out the requests no answer will come for, still queued for the
     * pipe or unread in it, so that a bridge that reads them later does not
     * run them as new and answer the request then waiting; how many bytes
     * of theirs the pipe held.
     */
    const dropUnread = (): number => {
      const dropped = Result.flatMap(writer.dropQueued(), () => takeUnread(options.requestPath))
      if (Result.isFailure(dropped)) warn(dropped.failure.message)
      return Result.isSuccess(dropped) ? dropped.success.length : 0
    }

    const farEndLost = () => {
      if (broken !== undefined) return
      // Answers it wrote before it died and still in the pipe are still its answers (our socket
      // flows, so it holds none back).
      const written = takeUnread(options.answerPath)
      if (Result.isSuccess(written)) for (const frame of framer.push(written.success)) onFrame(frame)
      // An answer cut short by its death is no answer; the next bridge starts a fresh one.
      framer = makeBlockFramer(options.maxAnswerBytes)
      if (owed === 0) return
      const lost = owed
      owed = 0
      givenUp = 0
      // What it read will never be answered, and what it left unread must not be answered as new.
      dropUnread()
      warn(`the bridge on ${where} exited owing ${lost} answer(s); its unanswered request(s) are dropped`)
      answer(Exit.fail(new FarEndExited({ message: `the bridge on ${where} exited before it answered` })))
      // A request waiting for the owed answers goes out at once.
      wakeSettling()
    }
    if (options.farEndExits !== undefined) yield* options.farEndExits(Effect.sync(farEndLost))
    yield* listenReader(options.answerPath, {
      onChunk: (chunk) => {
        for (const frame of framer.push(chunk)) onFrame(frame)
      },
      onFailure: (error) => {
        broken = error
        answer(Exit.fail(error))
        wakeSettling()
      }
    })

    // Only the holder of the wire has a timer: one deadline at a time.
    const deadline = yield* makeDeadline

    /** Waits until no answer is owed, each owed one for up to `timeout`; past that, assumes they were dropped. */
    const settle = (timeout: Duration.Duration): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (owed === 0 || broken !== undefined) return Effect.void
        const signal = Deferred.makeUnsafe<boolean>()
        settled = signal
        deadline.set(timeout, () => void Deferred.doneUnsafe(signal, Exit.succeed(false)))
        const waited = Effect.onExit(Deferred.await(signal), () =>
          Effect.sync(() => {
            deadline.clear()
            if (settled === signal) settled = undefined
          }))
        return Effect.flatMap(waited, (woken) => {
          // Woken by an answer that came or a far end that died: wait for the rest, afresh.
          if (woken) return settle(timeout)
          if (owed > 0) {
            // Those still in the pipe were read by no one (a bridge gone, the next not come yet).
            const unread = dropUnread()
            const alsoUnread = unread > 0 ? `; the ${unread} byte(s) of them still unread in ${options.requestPath} are dropped too` : ""
            warn(`no answer on ${where} to ${owed} request(s) that timed out; assuming they were dropped${alsoUnread}`)
          }
          owed = 0
          givenUp = 0
          return Effect.void
        })
      })

    const send = (
      request: string,
      timeout: Duration.Duration,
      onInterim: ((frame: string) => void) | undefined
    ): Effect.Effect<string, AskError> =>
      Effect.suspend(() => {
        if (broken !== undefined) return Effect.fail(broken)
        const asker = Deferred.makeUnsafe<string, AskError>()
        inFlight = asker
        inFlightInterim = onInterim
        owed += 1
        const number = ++written
        writer.send(request, (error) => {
          // A write that fails was not sent whole: no answer is owed for it.
          if (error === undefined || inFlight !== asker) return
          owed -= 1
          answer(Exit.fail(error))
        })
        deadline.set(timeout, () => {
          if (inFlight === asker) answer(Exit.fail(new ExchangeTimeout({ message: `no answer on ${where} in time` })))
        })
        return Effect.onExit(Deferred.await(asker), (exit) =>
          Effect.sync(() => {
            deadline.clear()
            // Timed out or interrupted: its answer stays owed (the count stays), so the next request skips it.
            if (inFlight !== asker) return
            inFlight = undefined
            inFlightInterim = undefined
            // Interrupted (a cancelled turn): a bridge of this process stops its work and answers at once.
            if (Exit.hasInterrupts(exit) && options.abandon !== undefined) {
              givenUp += 1
              options.abandon(number)
            }
          }))
      })

    const ask: Exchange["ask"] = (request, timeout, onInterim) =>
      Effect.suspend(() => {
        const patience = Duration.fromInputUnsafe(timeout)
        return onTheWire.withPermits(1)(Effect.andThen(settle(patience), send(request, patience, onInterim)))
      })
    return { ask, unanswered: () => owed }
  })
