/**
 * The agent's side of the interact FIFOs: messages arrive on interact_in as
 * `{channel}\t{escaped text}\n` lines, replies leave on interact_out the same
 * way. Writers may open and close interact_in per message (`printf … >`),
 * and a reader of interact_out may come and go: replies wait in the pipe.
 * A line longer than `maxLineBytes` is never buffered whole nor passed on
 * cut short: its sender (the channel at the start of the line) is told it
 * was refused. Part of a line whose writer went away without its newline
 * (nothing more for `unterminatedWait`, or the bridge process exited) is
 * taken as a whole line, so the next writer's line is not glued to it
 * (UnterminatedLine). What is read goes
 * at once to the agent's journal (keepOnRead), and what is still unread
 * when that ends, at a stop, is taken out of the pipe for it (UnreadMessages).
 */
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as FiberSet from "effect/FiberSet"
import * as Latch from "effect/Latch"
import * as Layer from "effect/Layer"
import type * as Pull from "effect/Pull"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { listenReader, openWriter } from "./PipeEnd.js"
import { type FifoError, type FifoPaths } from "./RuntimeDir.js"
import * as Handover from "./Handover.js"
import * as OversizedLine from "./OversizedLine.js"
import { type InboundMessage, Interact, InteractError, type InteractService } from "../ports/Interact.js"
import { defaultMaxLineBytes, type Frame, type FrameTooLarge, makeLineFramer } from "../runtime/Framing.js"
import { decodeInteractLine, encodeEventLine, encodeInteractLine, eventsOptInChannel } from "./InteractLine.js"
import * as UnreadMessages from "./UnreadMessages.js"
import * as UnreadReplies from "./UnreadReplies.js"
import type { FarEndExits } from "./Exchange.js"
import * as UnterminatedLine from "./UnterminatedLine.js"

/** One pull of the message stream: the next message, or its end (`Cause.Done`) or failure. */
type MessagePull<E> = Pull.Pull<Arr.NonEmptyReadonlyArray<InboundMessage>, E>

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
  /**
   * Where the replies still unread in interact_out when this closes are
   * kept, to be written to it first when the next one opens: a reply
   * counts as delivered once in the pipe, and a pipe loses what it holds
   * when its last descriptor closes. For a far end outside this process
   * (with a built-in bridge, Handover sees the last replies read).
   */
  readonly keepUnread?: string
  /**
   * The far end is an executable offered the turns' events (it was started
   * with PLANCKCLAW_EVENTS=1): they go to a channel once the bridge opted in
   * for it (`{channel}\t\tevents`, InteractLine.encodeEventsOptIn); other
   * channels, and a bridge that never asks, see replies alone.
   */
  readonly eventsOnRequest?: boolean
  /**
   * Where to hear that the process writing interact_in exited (an
   * executable bridge of the run): part of a line it left is ended then,
   * before the restarted bridge's first line can join it.
   */
  readonly farEndExits?: FarEndExits
}

export { oversizedReply } from "./OversizedLine.js"
export { unterminatedWait } from "./UnterminatedLine.js"

/**
 * Messages read ahead of the agent at most (more only within one read): then
 * the reader pauses. Not once they are kept as read (keepOnRead): the pipe
 * loses what it holds in a crash, the journal does not.
 */
const inboxLimit = 64

export const make = (options: FifoInteractOptions): Effect.Effect<InteractService, FifoError, Scope.Scope> =>
  Effect.gen(function*() {
    const outbound = yield* openWriter(options.paths.interactOut)
    const kept = options.keepUnread
    if (kept !== undefined) {
      yield* UnreadReplies.resend(kept, outbound)
      // Run before the writer closes (finalizers run last added first), while the pipe still holds them.
      yield* Effect.addFinalizer(() => UnreadReplies.keep(kept, options.paths.interactOut))
    }
    const maxLineBytes = options.maxLineBytes ?? defaultMaxLineBytes
    const handover = options.handover
    // Refusals, warnings and counts start from the reader's callbacks; they end with the scope.
    const background = yield* FiberSet.makeRuntime<never>()

    const write = (line: string) =>
      Effect.mapError(outbound.write(line), (error) => new InteractError({ message: error.message, cause: error }))
    // With a built-in bridge in this process, a reply is sent once the bridge
    // has it in its keeping (see Handover): the lock keeps each line's number
    // right. Without one, the socket keeps the writes in call order by itself.
    const writeLock = yield* Semaphore.make(1)
    const send: InteractService["send"] = (message) =>
      Result.match(encodeInteractLine(message), {
        onFailure: (error) => new InteractError({ message: `cannot send reply: ${error.message}` }),
        onSuccess: (line) =>
          handover === undefined ? write(line) : write(line).pipe(
            Effect.andThen(Ref.updateAndGet(handover.written, (n) => n + 1)),
            writeLock.withPermits(1),
            Effect.flatMap((count) => Handover.replyKept(handover, count))
          )
      })

    const refuseOversized = (error: FrameTooLarge) => OversizedLine.refuse(error, send)
    const countRead = (lines: number) => {
      if (handover !== undefined && lines > 0) background(SubscriptionRef.update(handover.read, (n) => n + lines))
    }

    // One inbox for the life of the scope, fed straight from the socket's
    // data events, so a line is never half-read by a consumer that stops:
    // every run of `messages` takes from it. `undefined` marks the end of
    // input (after every message read before it). Reading starts when
    // `messages` is first pulled, and pauses while the inbox is full (lines
    // wait in the pipe instead of in memory), unless what is read is kept at
    // once (keepOnRead): then it starts there, never pauses, and stops for
    // good when that ends.
    const inbox: Array<InboundMessage | undefined> = []
    // A taker finding nothing closes the latch and waits for a delivery to
    // open it, then looks again: woken, not handed a line, so one
    // interrupted meanwhile takes nothing.
    const delivered = Latch.makeUnsafe(false)
    let broken: InteractError | undefined
    let reading: "not yet" | "started" | "stopped" = "not yet"
    let paused = true
    let keep: ((read: ReadonlyArray<InboundMessage>) => void) | undefined
    // While a refusal is being sent, no later line reaches the agent, so the
    // refusal goes out before any reply to a line that followed it.
    let refusing = 0
    // While a bridge that exited is drained (UnterminatedLine.writerExited), the reader does not pause.
    let draining = false

    /** What a take gets now: the next line, the end of input, or the break; undefined: it waits. */
    const takeNow = (): MessagePull<InteractError> | undefined => {
      if (refusing > 0) return undefined
      if (inbox.length > 0) {
        const next = inbox.shift()
        return next === undefined ? Cause.done() : Effect.succeed([next])
      }
      return broken === undefined ? undefined : Effect.fail(broken)
    }
    const openValve = () => {
      if (paused && reading === "started" && (keep !== undefined || inbox.length < inboxLimit)) {
        paused = false
        valve.resume()
        unterminated.watch()
      }
    }
    const deliver = () => {
      if (refusing === 0 && (inbox.length > 0 || broken !== undefined)) delivered.openUnsafe()
      openValve()
    }

    /** Channels whose bridge asked for the turns' events (eventsOnRequest). */
    const optedIn = new Set<string>()
    const eventsOnRequest = options.eventsOnRequest === true && handover === undefined

    const framer = makeLineFramer(maxLineBytes)
    const onFrames = (frames: ReadonlyArray<Frame>) => {
      // This read's messages, when they are kept as read.
      const keeping = keep
      const read: Array<InboundMessage> | undefined = keeping === undefined ? undefined : []
      let counted = 0
      for (const line of frames) {
        const optIn = Result.isSuccess(line) ? eventsOptInChannel(line.success) : undefined
        if (optIn !== undefined) {
          // Not a message: a bridge not offered events (no PLANCKCLAW_EVENTS) is not answered either.
          if (eventsOnRequest) optedIn.add(optIn)
          else background(Effect.logDebug(`ignored an opt-in to events on interact_in for ${optIn}: this bridge is offered none`))
          counted += 1
          continue
        }
        if (Result.isFailure(line)) {
          refusing += 1
          background(refuseOversized(line.failure).pipe(
            // Counted once answered: a piped run waits for the replies it counted.
            Effect.ensuring(Effect.sync(() => {
              refusing -= 1
              countRead(1)
              deliver()
            }))
          ))
          continue
        }
        const message = decodeInteractLine(line.success)
        if (Result.isFailure(message)) background(Effect.logWarning(`ignored a line on interact_in: ${message.failure.message}`))
        else {
          inbox.push(message.success)
          read?.push(message.success)
        }
        counted += 1
      }
      // Kept before anything else runs: a stop or a kill from here on loses none of them.
      if (keeping !== undefined && read !== undefined && read.length > 0) keeping(read)
      countRead(counted)
      if (keeping === undefined && inbox.length >= inboxLimit && !draining) {
        paused = true
        valve.pause()
      }
      deliver()
    }

    const unterminated = UnterminatedLine.make({
      pipe: options.paths.interactIn,
      framer,
      onFrames,
      background,
      paused: () => paused,
      startDrain: () => {
        if (reading === "stopped" || broken !== undefined) return false
        draining = true
        valve.resume()
        return true
      },
      // Paused again, then opened if the agent reads and has room, as at any delivery.
      endDrain: () => {
        draining = false
        paused = true
        valve.pause()
        openValve()
        return reading !== "stopped" && broken === undefined
      }
    })
    const valve = yield* listenReader(options.paths.interactIn, {
      onChunk: unterminated.push,
      onFailure: (error) => {
        broken = new InteractError({ message: error.message, cause: error })
        deliver()
      }
    }, { paused: true })

    if (options.farEndExits !== undefined) yield* options.farEndExits(unterminated.writerExited)
    // After that drain (it may hold the dead bridge's opt-ins): the restart may be another program, which must ask anew.
    if (options.farEndExits !== undefined && eventsOnRequest) yield* options.farEndExits(Effect.sync(() => optedIn.clear()))

    if (handover !== undefined) {
      yield* Handover.inputConsumed(handover).pipe(
        Effect.andThen(Effect.sync(() => {
          inbox.push(undefined)
          deliver()
        })),
        Effect.forkScoped
      )
    }

    // One message per pull: a consumer that stops after n messages takes exactly n.
    const take: MessagePull<InteractError> = Effect.suspend(() => {
      if (reading === "not yet") reading = "started"
      const now = takeNow()
      if (now === undefined) delivered.closeUnsafe()
      openValve()
      return now ?? Effect.andThen(delivered.await, take)
    })
    const messages: InteractService["messages"] = Stream.fromPull(Effect.succeed(take))

    // At the end, what the pipe still holds is kept too: the run removes it.
    const keepOnRead: NonNullable<InteractService["keepOnRead"]> = (given) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          keep = given
          if (reading === "not yet") reading = "started"
          openValve()
        }),
        () =>
          Effect.suspend(() => {
            reading = "stopped"
            keep = undefined
            paused = true
            valve.pause()
            return Effect.map(UnreadMessages.take(options.paths.interactIn, framer), (unread) => {
              if (unread.length > 0) given(unread)
            })
          })
      )

    // Events only to a bridge that shows them: an executable bridge may be the original's, which would print them.
    const event: InteractService["event"] = (channel, turnEvent) =>
      eventsOnRequest && !optedIn.has(channel) ? Effect.void : Result.match(encodeEventLine(channel, turnEvent), {
        onFailure: (error) => new InteractError({ message: `cannot send event: ${error.message}` }),
        onSuccess: write
      })
    if (eventsOnRequest) return { messages, keepOnRead, send, event, showsEvents: (channel) => optedIn.has(channel) }
    return handover?.events === true ? { messages, keepOnRead, send, event } : { messages, keepOnRead, send }
  })

export const layer = (options: FifoInteractOptions): Layer.Layer<Interact, FifoError> =>
  Layer.effect(Interact, make(options))
