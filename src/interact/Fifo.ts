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
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type FifoError, type FifoPaths, openReader, openWriter } from "../fifo/Fifo.js"
import { type InboundMessage, Interact, InteractError, type InteractService } from "../Interact.js"
import {
  decodeInteractLine,
  defaultMaxLineBytes,
  encodeInteractLine,
  framed,
  type FrameTooLarge,
  makeLineFramer
} from "../Wire.js"

export interface FifoInteractOptions {
  readonly paths: Pick<FifoPaths, "interactIn" | "interactOut">
  /** Longest inbound line accepted; default 1 MiB. */
  readonly maxLineBytes?: number
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

    const send: InteractService["send"] = (message) =>
      Either.match(encodeInteractLine(message), {
        onLeft: (error) => new InteractError({ message: `cannot send reply: ${error.message}` }),
        onRight: (line) =>
          outbound.write(line).pipe(
            Effect.mapError((error) => new InteractError({ message: error.message, cause: error }))
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
    const inbox = yield* Queue.bounded<InboundMessage>(64)
    const broken = yield* Deferred.make<never, InteractError>()
    yield* inbound.chunks.pipe(
      framed(() => makeLineFramer(maxLineBytes)),
      Stream.runForEach((line) =>
        Either.match(Either.flatMap(line, decodeInteractLine), {
          onLeft: (error) =>
            error._tag === "FrameTooLarge"
              ? refuseOversized(error)
              : Effect.logWarning(`ignored a line on interact_in: ${error.message}`),
          onRight: (message) => Queue.offer(inbox, message)
        })),
      Effect.catchAll((error) => Deferred.fail(broken, new InteractError({ message: error.message, cause: error }))),
      Effect.forkScoped
    )
    // One element per pull: a consumer that stops after n messages takes exactly n.
    const messages: InteractService["messages"] = Stream.fromQueue(inbox, { maxChunkSize: 1 }).pipe(
      Stream.interruptWhen(Deferred.await(broken))
    )

    return { messages, send }
  })

export const layer = (options: FifoInteractOptions): Layer.Layer<Interact, FifoError> =>
  Layer.scoped(Interact, make(options))
