/**
 * Request / answer over a FIFO pair: one request at a time, answers matched
 * by order (the wire carries no ids), late answers to timed-out requests
 * discarded.
 *
 * This is on the path of every turn (two exchanges for a plain turn, four
 * with a tool), so it is plain callbacks inside one `Effect.callback` per
 * request: answers are cut by the framer straight from the socket's data
 * events and handed to the request in flight. A Stream, a Queue, a race with
 * the reader's failure and a `timeoutFail` per request cost several times
 * the round trip itself; so does a sleeping fiber per request. Timeouts are
 * deadlines instead, read from Effect's Clock and watched by one sleeping
 * fiber per exchange (see `Deadlines`), so a TestClock still drives them.
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import { makeDeadline } from "./Deadline.js"
import { type FrameTooLarge, makeBlockFramer } from "./Framing.js"
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
    timeout: Duration.Input
  ) => Effect.Effect<string, AskError>
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

/** One `ask`, from the moment it is queued until it is resumed or abandoned. */
interface Job {
  readonly request: string
  readonly timeout: Duration.Duration
  readonly resume: (result: Effect.Effect<string, AskError>) => void
  /** queued: behind another request; settling: waiting for owed answers; sent: written, awaiting its answer. */
  state: "queued" | "settling" | "sent" | "done"
}

/**
 * The wire carries no request ids, so answers are matched by order, and
 * requests are serialized (a queue of jobs; only the head is on the wire). A
 * request that timed out (or was interrupted) still owes an answer: before
 * the next request is written, owed answers are awaited (up to that
 * request's timeout, afresh after each one that comes) and discarded, so a
 * late answer is never handed to the wrong request. Answers that nobody
 * asked for are dropped with a warning as they arrive. When the answer pipe
 * breaks, every request waiting and every later one fails with its error.
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
}): Effect.Effect<Exchange, FifoError, Scope.Scope> =>
  Effect.gen(function*() {
    // Warnings start from callbacks: with the builder's runtime, they see its logger.
    const fork = Effect.runForkWith(yield* Effect.context<never>())
    const warn = (message: string) => void fork(Effect.logWarning(message))
    const where = options.answerPath

    const jobs: Array<Job> = []
    let owed = 0
    let broken: FifoError | undefined

    // Only the job at the head of the queue has a timer: one deadline at a time.
    const deadline = yield* makeDeadline
    let timed: Job | undefined
    const startTimer = (job: Job, onExpiry: () => void) => {
      timed = job
      deadline.set(job.timeout, () => {
        timed = undefined
        onExpiry()
      })
    }
    const stopTimer = (job: Job) => {
      if (timed !== job) return
      timed = undefined
      deadline.clear()
    }

    /** Takes `job` off the queue for good and lets the next one start. */
    const finish = (job: Job) => {
      stopTimer(job)
      job.state = "done"
      if (jobs[0] === job) {
        jobs.shift()
        const next = jobs[0]
        if (next !== undefined) start(next)
      } else {
        const index = jobs.indexOf(job)
        if (index >= 0) jobs.splice(index, 1)
      }
    }

    const send = (job: Job) => {
      job.state = "sent"
      // Counted as owed from the moment it is sent: if it times out or is
      // interrupted, its answer is still due and must be skipped.
      owed += 1
      startTimer(job, () => {
        job.resume(Effect.fail(new ExchangeTimeout({ message: `no answer on ${where} in time` })))
        finish(job)
      })
      writer.send(job.request, (error) => {
        // A write that fails was not sent whole: no answer is owed for it.
        if (error === undefined || job.state !== "sent") return
        owed -= 1
        job.resume(Effect.fail(error))
        finish(job)
      })
    }

    const start = (job: Job) => {
      if (broken !== undefined) {
        job.resume(Effect.fail(broken))
        return finish(job)
      }
      if (owed === 0) return send(job)
      job.state = "settling"
      const giveUp = () => {
        warn(`no answer on ${where} to ${owed} request(s) that timed out; assuming they were dropped`)
        owed = 0
        send(job)
      }
      startTimer(job, giveUp)
    }

    const onFrame = (frame: Result.Result<string, FrameTooLarge>) => {
      const head = jobs[0]
      if (head !== undefined && head.state === "sent" && owed === 1) {
        // The answer to the request in flight (no older one is owed).
        owed = 0
        head.resume(Effect.fromResult(frame))
        return finish(head)
      }
      if (owed === 0) return warn(`discarded an answer on ${where} that no request was waiting for`)
      owed -= 1
      warn(`discarded a late answer on ${where} to a request that timed out`)
      if (head !== undefined && head.state === "settling") {
        stopTimer(head)
        if (owed === 0) send(head)
        else start(head)
      }
    }

    let framer = makeBlockFramer(options.maxAnswerBytes)
    const writer = yield* openWriter(options.requestPath)

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
      // What it read will never be answered, and what it left unread must not be answered as new.
      const dropped = Result.flatMap(writer.dropQueued(), () => takeUnread(options.requestPath))
      if (Result.isFailure(dropped)) warn(dropped.failure.message)
      warn(`the bridge on ${where} exited owing ${lost} answer(s); its unanswered request(s) are dropped`)
      const head = jobs[0]
      if (head?.state === "sent") {
        head.resume(Effect.fail(new FarEndExited({ message: `the bridge on ${where} exited before it answered` })))
        finish(head)
      } else if (head?.state === "settling") {
        stopTimer(head)
        send(head)
      }
    }
    if (options.farEndExits !== undefined) yield* options.farEndExits(Effect.sync(farEndLost))
    yield* listenReader(options.answerPath, {
      onChunk: (chunk) => {
        for (const frame of framer.push(chunk)) onFrame(frame)
      },
      onFailure: (error) => {
        broken = error
        for (const job of jobs.splice(0)) {
          stopTimer(job)
          job.state = "done"
          job.resume(Effect.fail(error))
        }
      }
    })

    const ask: Exchange["ask"] = (request, timeout) =>
      Effect.callback<string, AskError>((resume) => {
        const job: Job = { request, timeout: Duration.fromInputUnsafe(timeout), resume, state: "queued" }
        jobs.push(job)
        if (jobs.length === 1) start(job)
        // Interrupted: a request already sent keeps its answer owed (the count
        // stays), so the next one skips it, as after a timeout.
        return Effect.sync(() => {
          if (job.state !== "done") finish(job)
        })
      })
    return { ask }
  })
