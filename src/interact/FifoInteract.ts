/**
 * The agent's side of the interact FIFOs: messages arrive on interact_in as
 * `{channel}\t{escaped text}\n` lines, replies leave on interact_out the same
 * way. Writers may open and close interact_in per message (`printf … >`),
 * and a reader of interact_out may come and go: replies wait in the pipe.
 * A line longer than `maxLineBytes` is never buffered whole nor passed on
 * cut short: its sender (the channel at the start of the line) is told it
 * was refused.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { openReader, openWriter } from "../fifo/PipeEnd.js"
import { type FifoError, type FifoPaths } from "../fifo/RuntimeDir.js"
import * as Handover from "../fifo/Handover.js"
import { type InboundMessage, Interact, InteractError, type InteractService } from "../Interact.js"
import { defaultMaxLineBytes, framed, type FrameTooLarge, makeLineFramer } from "../fifo/Framing.js"
import { decodeInteractLine, encodeInteractLine } from "../fifo/InteractLine.js"

export interface FifoInteractOptions {
  readonly paths: Pick<FifoPaths, "interactIn" | "interactOut">
  /** Longest inbound line accepted; default 1 MiB. */
  readonly maxLineBytes?: number
  /**
   * Set when a built-in bridge of this process serves the far end: `messages`
   * then ends once the bridge's input has ended and every line it forwarded
   * has been read, and the counts let the run wait for the last replies.
   */
  readonly handover?: Handover.Handover
}

/** What the sender of a line longer than the pipe accepts is told. */
export const oversizedReply = (limit: number): string =>
  `Your message is more than ${limit} bytes long, more than this agent accepts. ` +
  "Nothing was processed: please send it in smaller parts."

export const make = (options: FifoInteractOptions): Effect.Effect<InteractService, FifoError, Scope.Scope> =>
  Effect.gen(function*() {
    const inbound = yield* openReader(options.paths.interactIn)
    const outbound = yield* openWriter(options.paths.interactOut)
    const maxLineBytes = options.maxLineBytes ?? defaultMaxLineBytes
    const handover = options.handover

    // With a built-in bridge in this process, a reply is sent once the bridge
    // has it in its keeping (see Handover): the lock keeps each line's number right.
    const writeLock = yield* Effect.makeSemaphore(1)
    const send: InteractService["send"] = (message) =>
      Either.match(encodeInteractLine(message), {
        onLeft: (error) => new InteractError({ message: `cannot send reply: ${error.message}` }),
        onRight: (line) =>
          outbound.write(line).pipe(
            Effect.mapError((error) => new InteractError({ message: error.message, cause: error })),
            Effect.zipRight(handover === undefined ? Effect.succeed(0) : Ref.updateAndGet(handover.written, (n) => n + 1)),
            writeLock.withPermits(1),
            Effect.flatMap((count) => handover === undefined ? Effect.void : Handover.replyKept(handover, count))
          )
      })

    // A line too long to hold never reaches the agent, so its sender is told
    // here (its channel is in the line's first bytes): never a silent drop.
    const refuseOversized = (error: FrameTooLarge) => {
      const head = error.head ?? ""
      const tab = head.indexOf("\t")
      if (tab === -1) {
        return Effect.logWarning(`ignored a line on interact_in with no channel in its first bytes: ${error.message}`)
      }
      const channel = head.slice(0, tab)
      return Effect.logWarning(`refused a line on interact_in from ${channel}: ${error.message}`).pipe(
        Effect.zipRight(send({ channel, text: oversizedReply(error.limit) })),
        Effect.catchAll((failure) => Effect.logWarning(`could not tell ${channel} its message was refused: ${failure.message}`))
      )
    }

    // One reader for the life of the scope, so a line is never half-read by a
    // consumer that stops: every run of `messages` takes from the same inbox.
    // It starts reading only when `messages` is first pulled: until the agent
    // is ready to journal them, lines wait in the pipe instead of in memory.
    const inbox = yield* Queue.bounded<Option.Option<InboundMessage>>(64)
    const broken = yield* Deferred.make<never, InteractError>()
    const started = yield* Deferred.make<void>()
    const countRead = handover === undefined ? Effect.void : SubscriptionRef.update(handover.read, (n) => n + 1)
    yield* Deferred.await(started).pipe(
      Effect.zipRight(inbound.chunks.pipe(
        framed(() => makeLineFramer(maxLineBytes)),
        Stream.runForEach((line) =>
          Either.match(Either.flatMap(line, decodeInteractLine), {
            onLeft: (error) =>
              error._tag === "FrameTooLarge"
                ? refuseOversized(error)
                : Effect.logWarning(`ignored a line on interact_in: ${error.message}`),
            onRight: (message) => Queue.offer(inbox, Option.some(message))
          }).pipe(Effect.zipRight(countRead)))
      )),
      Effect.catchAll((error) => Deferred.fail(broken, new InteractError({ message: error.message, cause: error }))),
      Effect.forkScoped
    )
    // The end marker follows every message read before it, in the same queue.
    if (handover !== undefined) {
      yield* Handover.inputConsumed(handover).pipe(Effect.zipRight(Queue.offer(inbox, Option.none())), Effect.forkScoped)
    }
    // One element per pull: a consumer that stops after n messages takes exactly n.
    const messages: InteractService["messages"] = Stream.unwrap(
      Effect.as(Deferred.succeed(started, undefined), Stream.fromQueue(inbox, { maxChunkSize: 1 }))
    ).pipe(
      Stream.takeWhile(Option.isSome),
      Stream.map((message) => message.value),
      Stream.interruptWhen(Deferred.await(broken))
    )

    return { messages, send }
  })

export const layer = (options: FifoInteractOptions): Layer.Layer<Interact, FifoError> =>
  Layer.scoped(Interact, make(options))
