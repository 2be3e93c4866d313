/**
 * The bridge side of the FIFOs: serve an Interact, Brain or Claws service on
 * the far ends of the pipes the agent speaks through. Each function opens its
 * two FIFOs for as long as it runs; fork it (`Effect.forkScoped`) and
 * interrupting the fiber closes them.
 *
 * Requests are answered one at a time, in order, and every request gets
 * exactly one answer (an error answer when it cannot be served), so the
 * requester's order-based matching never slips.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { BrainError, type BrainService, type MessagesRequest, type MessagesResponse, streamOf } from "../ports/Brain.js"
import { STREAMS_HELLO, takeStreamFlag, textEventFrame } from "./BrainStreamFrame.js"
import type * as Abandon from "./Abandon.js"
import type { InteractError, InteractService, OutboundMessage } from "../ports/Interact.js"
import { loneSurrogateRefusal } from "../runtime/WellFormed.js"
import { brainErrorFrame, decodeBrainRequest, encodeBrainFrame } from "./BrainFrame.js"
import {
  defaultMaxBlockBytes,
  defaultMaxLineBytes,
  type Frame,
  framed,
  type FrameTooLarge,
  makeBlockFramer,
  makeLineFramer
} from "../runtime/Framing.js"
import { decodeOutboundLine, encodeEventsOptIn, encodeInteractLine } from "./InteractLine.js"
import { openReader, openWriter, takeUnread } from "./PipeEnd.js"
import { type FifoError, type FifoPaths } from "./FifoPaths.js"
import type * as Handover from "./Handover.js"

export interface ServeOptions {
  /** Largest request accepted (a line for interact and claws, a block for the brain). */
  readonly maxRequestBytes?: number
  /** Requests the agent in this process gave up: their work is interrupted (see Abandon). */
  readonly abandon?: Abandon.Abandon
}

/**
 * Reads brain_in frames, answers each on brain_out: the response JSON, or
 * `{"error":"timeout"|"fatal"}` when the brain fails or the request is bad.
 * A request with `"stream":true` from a brain that streams gets its text as
 * event frames first (BrainStreamFrame); without it, or from a brain that
 * answers whole, the answer alone, as the original's bridges answer.
 * `announce`: a bridge process of its own says first that it streams (the
 * hello frame), as an executable does; the agent of the same run knows it.
 */
export const serveBrain = (
  brain: BrainService,
  paths: Pick<FifoPaths, "brainIn" | "brainOut">,
  options: ServeOptions & { readonly announce?: boolean } = {}
): Effect.Effect<never, FifoError> =>
  Effect.scoped(Effect.gen(function*() {
    const requests = yield* openReader(paths.brainIn)
    const answers = yield* openWriter(paths.brainOut)
    if (options.announce === true && brain.stream !== undefined) yield* answers.write(STREAMS_HELLO)
    const abandon = options.abandon
    let read = 0
    // Each text delta goes out as it comes; a pipe that broke fails the answer's write too, which ends serving.
    const tell = (text: string) => Effect.ignore(answers.write(textEventFrame(text)))
    const answerOf = (request: MessagesRequest, streamed: boolean) => {
      if (!streamed || brain.stream === undefined) return brain.complete(request)
      let answer: MessagesResponse | undefined
      return Effect.andThen(
        Stream.runForEach(streamOf(brain, request), (event) => {
          if (event._tag === "Answer") answer = event.response
          return event._tag === "TextDelta" && event.text !== "" ? tell(event.text) : Effect.void
        }),
        // A brain's stream ends with its answer (Brain.BrainEvent); one that did not failed.
        Effect.suspend(() =>
          answer === undefined
            ? Effect.fail(new BrainError({ reason: "fatal", detail: "the brain's stream ended without its answer" }))
            : Effect.succeed(answer)
        )
      )
    }
    const answer = (frame: Frame, number: number): Effect.Effect<string> =>
      Result.match(Result.flatMap(frame, decodeBrainRequest), {
        onFailure: (error) => Effect.as(Effect.logWarning(`bad request on brain_in: ${error.message}`), brainErrorFrame("fatal")),
        onSuccess: (received) => {
          const { request, streamed } = takeStreamFlag(received)
          const work = answerOf(request, streamed).pipe(
            Effect.map((response) =>
              Result.getOrElse(encodeBrainFrame(response), () => brainErrorFrame("fatal"))
            ),
            Effect.catchTag("BrainError", (error) =>
              Effect.as(
                // Not the wire's word ("timeout" stands for any failure that may pass): the detail says what happened.
                Effect.logWarning(`${error.reason === "timeout" ? "brain gave up for now" : "brain failed"}: ${error.detail}`),
                brainErrorFrame(error.reason, error.misconfigured)
              )),
            Effect.catchDefect((defect) =>
              Effect.as(Effect.logError("brain crashed", defect), brainErrorFrame("fatal")))
          )
          // Given up by the agent: its HTTP request is aborted, and the answer it no longer waits for is an error.
          return abandon === undefined ? work : abandon.serve(number, work, brainErrorFrame("fatal"))
        }
      })
    return yield* requests.chunks.pipe(
      framed(() => makeBlockFramer(options.maxRequestBytes ?? defaultMaxBlockBytes)),
      Stream.runForEach((frame) => Effect.flatMap(answer(frame, ++read), answers.write)),
      Effect.andThen(Effect.never)
    )
  }))

// The claws' side has its own module (plain callbacks, on every message's path with `--claw scripts`).
export { serveClaws } from "./ServeClaws.js"

/** A bug in the adapter while it delivers is logged: the replies after it, and the run, go on. */
const deliveryDefect = (reply: OutboundMessage) => (defect: unknown) =>
  Effect.logError(`reply to ${reply.channel} not delivered: the bridge failed on an internal error`, defect)

/** Delivered through the adapter's `send`; a failure or a defect is logged, and what follows goes on. */
const sendLogged = (interact: InteractService, reply: OutboundMessage) =>
  interact.send(reply).pipe(
    Effect.catch((error) => Effect.logWarning(`reply to ${reply.channel} not delivered: ${error.message}`)),
    Effect.catchDefect(deliveryDefect(reply))
  )

/**
 * The longest reply line a bridge reads from interact_out: the agent writes
 * what its brain answered (an answer frame holds up to 16 MiB), which
 * escaping may double. A longer line is not shown: its channel is told.
 */
const maxReplyLineBytes = 2 * defaultMaxBlockBytes + defaultMaxLineBytes

/** What a channel is shown in place of a reply line too long to read. */
export const oversizedReplyNotice = (limit: number): string =>
  `(A reply here was more than ${limit} bytes long, more than this bridge reads: it was not shown.)`

/** The channel a line too long to read was for, when its start names one (Framing's FrameTooLarge.head). */
const channelOf = (error: FrameTooLarge): string | undefined => {
  const tab = error.head?.indexOf("\t") ?? -1
  return tab > 0 ? error.head?.slice(0, tab) : undefined
}

interface LinesWaiting {
  readonly bytes: ReadonlyArray<Uint8Array>
  /** The lines they begin (the last may end in what follows): none answers a message sent after. */
  readonly lines: number
}

const noLines: LinesWaiting = { bytes: [], lines: 0 }

/**
 * What interact_out holds before a bridge process forwards anything, framed
 * as serving will frame it. If it cannot be read now, nothing (with a
 * warning): the reader opened next says why.
 */
const linesWaiting = (file: string, maxLineBytes: number): Effect.Effect<LinesWaiting> =>
  Result.match(takeUnread(file), {
    onFailure: (error) => Effect.as(Effect.logWarning(error.message), noLines),
    onSuccess: (bytes) => {
      if (bytes.length === 0) return Effect.succeed(noLines)
      const framer = makeLineFramer(maxLineBytes)
      return Effect.succeed({ bytes: [bytes], lines: framer.push(bytes).length + (framer.holding() ? 1 : 0) })
    }
  })

/**
 * Forwards the service's messages to interact_in and delivers the lines of
 * interact_out through `send`.
 *
 * With a `handover` (the agent runs in this process) it never completes on
 * its own: when the service's input ends it reports how many lines it
 * forwarded and keeps delivering, and the run decides when all is done.
 * Without one (a bridge process of its own, which cannot see the agent) it
 * completes once the input has ended and as many replies have been
 * delivered as messages were forwarded, so a bridge whose input closed
 * still shows the last answers; replies already waiting in interact_out
 * when it came are shown first and not counted.
 */
export const serveInteract = (
  interact: InteractService,
  paths: Pick<FifoPaths, "interactIn" | "interactOut">,
  options: ServeOptions & { readonly handover?: Handover.Handover } = {}
): Effect.Effect<void, FifoError | InteractError> =>
  Effect.scoped(Effect.gen(function*() {
    const toAgent = yield* openWriter(paths.interactIn)
    const maxLineBytes = options.maxRequestBytes ?? maxReplyLineBytes
    // Without a handover, replies are counted against the messages forwarded: those already waiting
    // (a killed bridge's, or kept from the last run) answer none of ours, so they are shown uncounted.
    const waiting = options.handover === undefined ? yield* linesWaiting(paths.interactOut, maxLineBytes) : noLines
    const fromAgent = yield* openReader(paths.interactOut)
    const forwarded = yield* Ref.make(0)
    const delivered = options.handover?.delivered ?? (yield* SubscriptionRef.make(0))
    const countDelivered = SubscriptionRef.update(delivered, (n) => n + 1)
    // Lines that are not replies count as kept too: the agent's count of lines written includes them.
    const kept = options.handover === undefined ? Effect.void : SubscriptionRef.update(options.handover.kept, (n) => n + 1)

    // An adapter with a journal of its own keeps the reply at once and
    // delivers it in the background; any other delivers it before the next line.
    const deliverReply = (reply: OutboundMessage, count: Effect.Effect<void>) =>
      interact.accept === undefined
        ? sendLogged(interact, reply).pipe(
          Effect.andThen(kept),
          Effect.andThen(count)
        )
        : interact.accept(reply).pipe(
          Effect.tap(() => kept),
          Effect.flatMap((delivery) =>
            Effect.forkScoped(Effect.andThen(delivery.pipe(Effect.catchDefect(deliveryDefect(reply))), count))
          )
        )

    let lines = 0
    const deliverReplies = Stream.concat(Stream.fromIterable(waiting.bytes), fromAgent.chunks).pipe(
      framed(() => makeLineFramer(maxLineBytes)),
      Stream.runForEach((line) => {
        const count = lines++ < waiting.lines ? Effect.void : countDelivered
        return Result.match(Result.flatMap(line, decodeOutboundLine), {
          onFailure: (error) => {
            const channel = error._tag === "FrameTooLarge" ? channelOf(error) : undefined
            const warned = Effect.logWarning(`ignored a line on interact_out: ${error.message}`)
            // A reply too long to read is never dropped unsaid: its channel hears of it.
            return channel === undefined || error._tag !== "FrameTooLarge"
              ? warned.pipe(Effect.andThen(kept), Effect.andThen(count))
              : Effect.andThen(warned, deliverReply({ channel, text: oversizedReplyNotice(error.limit) }, count))
          },
          // An event is no reply: shown if the adapter shows them, and counted on neither end.
          onSuccess: (read) =>
            read._tag === "Reply"
              ? deliverReply(read.reply, count)
              : read._tag === "UnknownEvent"
              ? Effect.logDebug(`skipped an event on interact_out: ${read.problem}`)
              : interact.event === undefined
              ? Effect.void
              : interact.event(read.channel, read.event).pipe(
                Effect.catch((error) => Effect.logWarning(`event for ${read.channel} not shown: ${error.message}`))
              )
        }).pipe(Effect.asVoid)
      }),
      Effect.andThen(Effect.never)
    )

    // A bridge process of its own that shows turns as they go asks the agent for each channel's events,
    // before the channel's first message (docs/pipes.md); with the agent in the same run (Handover), it has them.
    const optingIn = interact.event !== undefined && options.handover === undefined
    const optedIn = new Set<string>()
    const optIn = (channel: string) =>
      !optingIn || optedIn.has(channel) ? Effect.void : Effect.andThen(
        Effect.sync(() => optedIn.add(channel)),
        toAgent.write(encodeEventsOptIn(channel))
      )
    const inputEnded = interact.messages.pipe(
      Stream.runForEach((message) => {
        // UTF-8 on the pipe would turn half a character into U+FFFD unsaid: refused here, as the agent refuses it.
        const refusal = loneSurrogateRefusal(message.text)
        if (refusal !== undefined) {
          return sendLogged(interact, { channel: message.channel, text: refusal })
        }
        return Result.match(encodeInteractLine(message), {
          onFailure: (error) => Effect.logWarning(`message not forwarded: ${error.message}`),
          // Every line counts for the agent's reads (Handover); without one, the count waits for
          // replies, and a cancel gets none.
          onSuccess: (line) =>
            Effect.andThen(
              Effect.andThen(optIn(message.channel), toAgent.write(line)),
              message.cancel === true && options.handover === undefined ? Effect.void : Ref.update(forwarded, (n) => n + 1)
            )
        })
      }),
      Effect.andThen(Ref.get(forwarded))
    )
    const handover = options.handover
    const forwardMessages = handover === undefined
      ? Effect.flatMap(inputEnded, (total) => SubscriptionRef.changes(delivered).pipe(Stream.takeUntil((n) => n >= total), Stream.runDrain))
      : Effect.flatMap(inputEnded, (total) => Deferred.succeed(handover.forwarded, total)).pipe(
        Effect.andThen(Effect.never)
      )

    return yield* Effect.raceFirst(forwardMessages, deliverReplies)
  }))
