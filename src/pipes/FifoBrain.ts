/**
 * The agent's side of the brain FIFOs: a request frame goes to brain_in,
 * one answer frame comes back on brain_out. Whatever serves the other end
 * (the built-in Anthropic bridge, an external executable) answers Messages
 * API JSON or `{"error":"timeout"|"fatal"}`. A bridge that streams (see
 * `streaming`) is asked with `"stream":true` and may send the answer's text
 * as event frames before it (BrainStreamFrame).
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type * as Scope from "effect/Scope"
import {
  answerEvent,
  Brain,
  BrainError,
  type BrainEvent,
  type BrainService,
  decodeBrainAnswer,
  type MessagesRequest,
  type MessagesResponse,
  textDelta
} from "../ports/Brain.js"
import type { AbandonRequests } from "./Abandon.js"
import { askOnceMore, type AskError, type FarEndExited, type FarEndExits, farEndExited, makeExchange } from "./Exchange.js"
import { eventText, interimKind } from "./BrainStreamFrame.js"
import { type FifoError, type FifoPaths } from "./RuntimeDir.js"
import { makeRequestFrameEncoder, plainBrainAnswer } from "./BrainFrame.js"
import { defaultMaxBlockBytes, type FrameTooLarge } from "../runtime/Framing.js"
import { BrainRetriesConfig, BrainTimeoutConfig } from "../brain/BrainRetry.js"

export interface FifoBrainOptions {
  readonly paths: Pick<FifoPaths, "brainIn" | "brainOut">
  /** How long one request may wait for its answer; default 5 minutes. */
  readonly timeout?: Duration.Input
  /** Largest answer accepted; default 16 MiB. */
  readonly maxAnswerBytes?: number
  /** Where to hear that the bridge process exited (see Exchange), so a request it took is asked again at once. */
  readonly farEndExits?: FarEndExits
  /** A built-in bridge of this process, told of a request the agent gave up (see Abandon). */
  readonly abandon?: AbandonRequests
  /**
   * Whether to ask the bridge for the answer as it is written (the Brain's
   * `stream`): `builtin`, a bridge of this run that streams when asked;
   * `announced`, an executable told it may, once it has said it can (its
   * hello frame; until then a request is answered whole), and again after
   * each restart (`farEndExits`). Absent: never asked, as the original's
   * bridges are.
   */
  readonly streaming?: "builtin" | "announced"
}

export const defaultTimeout = Duration.minutes(5)

/**
 * How long the agent waits on brain_out for a bridge of its own: longer than
 * a built-in bridge's own give-up time (every attempt timing out, plus the
 * longest backoffs), so the bridge's error answer, not the agent's timeout,
 * ends a hopeless request.
 */
export const BridgePatienceConfig: Config.Config<Duration.Duration> = Config.map(
  Config.all([BrainTimeoutConfig, BrainRetriesConfig]),
  ([timeout, retries]) => Duration.seconds((timeout + 60) * (retries + 1) + 60)
)

export const make = (options: FifoBrainOptions): Effect.Effect<BrainService, FifoError, Scope.Scope> =>
  Effect.gen(function*() {
    const timeout = Duration.fromInputUnsafe(options.timeout ?? defaultTimeout)
    // Whether a request may ask for events: a bridge of the run streams, an executable once it said so.
    let streams = options.streaming === "builtin"
    const exchange = yield* makeExchange({
      requestPath: options.paths.brainIn,
      answerPath: options.paths.brainOut,
      maxAnswerBytes: options.maxAnswerBytes ?? defaultMaxBlockBytes,
      // Event frames and a hello are never answers, whichever bridge sends them.
      interim: (frame) => {
        const kind = interimKind(frame)
        if (kind === "hello" && options.streaming === "announced") streams = true
        return kind !== undefined
      },
      ...(options.farEndExits === undefined ? {} : { farEndExits: options.farEndExits }),
      ...(options.abandon === undefined ? {} : { abandon: options.abandon })
    })
    // A restarted executable is another process, maybe another program: it streams once it says so.
    // Heard after the exchange's own (registered first), so a hello the dead one left unread counts for nothing.
    if (options.farEndExits !== undefined && options.streaming === "announced") {
      yield* options.farEndExits(Effect.sync(() => void (streams = false)))
    }
    // Each turn resends the same history messages and tool specs: their JSON is kept.
    const encodeRequest = makeRequestFrameEncoder()
    // Made once: a turn's path builds no handler objects or generators of its own.
    const exchangeFailures = {
      ExchangeTimeout: () =>
        new BrainError({ reason: "timeout", detail: `no answer on brain_out within ${Duration.format(timeout)}` }),
      FrameTooLarge: (error: FrameTooLarge) => new BrainError({ reason: "fatal", detail: `brain answer ${error.message}` }),
      FifoError: (error: FifoError) => new BrainError({ reason: "fatal", detail: error.message }),
      FarEndExited: (error: FarEndExited) => new BrainError({ reason: "fatal", detail: `${error.message}, twice` })
    }
    // The usual answer skips the Schema; anything else (errors, other
    // blocks, odd fields) takes the full decode and its messages.
    const readAnswer = (answer: string): Effect.Effect<MessagesResponse, BrainError> => {
      const json = Result.try(() => JSON.parse(answer) as unknown)
      const plain = Result.isSuccess(json) ? plainBrainAnswer(json.success) : undefined
      return plain !== undefined ? Effect.succeed(plain) : decodeBrainAnswer(answer)
    }
    /** The request's frame; one that cannot be encoded is a fatal BrainError. */
    const frameOf = (request: MessagesRequest): Result.Result<string, BrainError> =>
      Result.mapError(encodeRequest(request), (error) => new BrainError({ reason: "fatal", detail: error.message }))
    const complete: BrainService["complete"] = (request) => {
      const frame = frameOf(request)
      if (Result.isFailure(frame)) return Effect.fail(frame.failure)
      // A bridge that crashed with the request is restarted: the request goes once more, to the new one.
      return Effect.flatMap(Effect.catchTags(askOnceMore(exchange, frame.success, timeout), exchangeFailures), readAnswer)
    }
    // A streamed request asked once more of a restarted bridge goes whole: it is written before that one can have said it streams.
    const askWhole = (request: MessagesRequest): Effect.Effect<string, AskError | BrainError> =>
      Effect.flatMap(Effect.fromResult(frameOf(request)), (whole) => exchange.ask(whole, timeout))
    const stream = (request: MessagesRequest): Stream.Stream<BrainEvent, BrainError> =>
      Stream.callback<BrainEvent, BrainError>((queue) => {
        if (!streams) {
          return Effect.matchEffect(complete(request), {
            onFailure: (error) => Queue.fail(queue, error),
            onSuccess: (answer) => Effect.andThen(Queue.offer(queue, answerEvent(answer)), Queue.end(queue))
          })
        }
        const frame = frameOf({ ...request, stream: true } as MessagesRequest)
        if (Result.isFailure(frame)) return Queue.fail(queue, frame.failure)
        let told = false
        const onEvent = (event: string) => {
          const text = eventText(event)
          if (text === undefined || text === "") return
          told = true
          Queue.offerUnsafe(queue, textDelta(text))
        }
        const ask = exchange.ask(frame.success, timeout, onEvent)
        // Asked once more of a restarted bridge only if none of its text was shown: none is ever shown twice.
        const asked = Effect.catchIf(ask, (error) => farEndExited(error) && !told, () => askWhole(request))
        const failures = {
          ...exchangeFailures,
          FarEndExited: (error: FarEndExited) =>
            new BrainError({ reason: "fatal", detail: `${error.message}${told ? ", part of its answer shown" : ", twice"}` })
        }
        return Effect.matchEffect(Effect.flatMap(Effect.catchTags(asked, failures), readAnswer), {
          onFailure: (error) => Queue.fail(queue, error),
          onSuccess: (answer) => Effect.andThen(Queue.offer(queue, answerEvent(answer)), Queue.end(queue))
        })
      })
    return options.streaming === undefined ? { complete } : { complete, stream }
  })

export const layer = (options: FifoBrainOptions): Layer.Layer<Brain, FifoError> => Layer.effect(Brain, make(options))
