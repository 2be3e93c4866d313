/**
 * Intake: serves an interact adapter's messages to the agent. Messages are
 * journaled as soon as they are read, so what arrives during a turn waits in
 * order and survives a crash; the agent takes them one at a time, in order.
 * Every message read gets a reply on its channel: the turn's, or the
 * apology (a defect in its turn, or in journaling it).
 * A cancel from a channel (Ctrl-C on the terminal) closes that channel's
 * messages not yet answered, interrupting the turn running for one of them.
 *
 * Agent.ts re-exports `run` as `Agent.serve` for hosts that know that name.
 * This file needs only the Agent tag (AgentService.ts), not its
 * implementation, so the two do not import each other.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Latch from "effect/Latch"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { Agent } from "./AgentService.js"
import {
  CANCELLED,
  type InboundMessage,
  Interact,
  type InteractError,
  type InteractService,
  type OutboundMessage
} from "../ports/Interact.js"
import * as Logging from "../runtime/Logging.js"
import { shownChannel } from "../runtime/ShownUrl.js"
import { Inbox, type Pending } from "../memory/Inbox.js"
import { APOLOGY, type TurnOutcome } from "./Turn.js"

/** Delivers one reply; a failure is logged, and the next message is taken all the same. */
const deliver = (interact: InteractService, message: OutboundMessage) =>
  interact.send(message).pipe(
    Effect.catch((error) => Effect.logError(`could not deliver a reply to channel ${shownChannel(message.channel)}: ${error.message}`)),
    // A bridge bug must not cost the next message: the exchange is already remembered.
    Effect.catchDefect((defect) => Effect.logError(`could not deliver a reply to channel ${shownChannel(message.channel)}: ${String(defect)}`))
  )

/**
 * A message read whose journaling hit a bug: it is answered with the
 * apology in its turn (so its channel's replies stay in order), as a turn's
 * defect is; a bridge, or the schedule waiting for a firing's reply, is
 * never left without one.
 */
interface Unjournaled {
  readonly unjournaled: InboundMessage
}

/** Restarts of a bridge's message stream after a defect: quick at first, then every 30 s at most. */
const intakeRestarts = Schedule.min([Schedule.exponential("100 millis"), Schedule.spaced("30 seconds")]).pipe(
  Schedule.jittered
)

/**
 * Answers the bridge's messages one at a time, in order, and delivers each
 * reply through it, until its stream ends and every message read is handled (a piped run ends this way, after
 * the last reply; a compaction it started in the background is waited for
 * by the agent layer's release). A defect in one turn is
 * logged and answered; the loop goes on. Logs go to stderr, never to a
 * host's stdout.
 */
export const run: Effect.Effect<void, never, Agent | Interact | Inbox> = Effect.scoped(Effect.gen(function*() {
  const agent = yield* Agent
  const interact = yield* Interact
  const inbox = yield* Inbox
  if (inbox.recovered.length > 0) {
    yield* Effect.logInfo(`answering ${inbox.recovered.length} message(s) left unanswered by the previous run`)
  }
  // Journaled messages waiting for the agent, in order; `undefined` once no
  // more will come. The loop, finding none, closes the latch and waits for
  // a `put` to open it (which resumes it at once, as a Queue's wake-up on the
  // next tick of the scheduler would not).
  const ready: Array<Pending | Unjournaled | undefined> = [...inbox.recovered]
  const arrived = Latch.makeUnsafe(false)
  const put = (item: Pending | Unjournaled | undefined) => {
    ready.push(item)
    arrived.openUnsafe()
  }
  const next: Effect.Effect<Pending | Unjournaled | undefined> = Effect.suspend(() => {
    if (ready.length > 0) return Effect.succeed(ready.shift())
    arrived.closeUnsafe()
    return Effect.andThen(arrived.await, next)
  })
  // A cancel (Ctrl-C on the terminal) for a channel: its messages read
  // before it and not answered yet are cancelled, the running turn among
  // them interrupted. A reply decided meanwhile is delivered all the same.
  const cancelled = new Set<number>()
  // The message being answered, until its reply is settled: a stop meanwhile leaves it to the next start.
  let answering: Pending | undefined
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      const left = ready.filter((item) => item !== undefined && "id" in item).length + (answering === undefined ? 0 : 1)
      return left === 0 ? Effect.void : Effect.logInfo(
        `stopped with ${left} message(s) read and not answered yet: they are kept, and the next start answers them`
      )
    })
  )
  let running: { readonly pending: Pending; readonly fiber: Fiber.Fiber<Option.Option<TurnOutcome>> } | undefined
  const cancel = (channel: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      for (const waiting of ready) if (waiting !== undefined && "id" in waiting && waiting.channel === channel) cancelled.add(waiting.id)
      const current = running
      if (current === undefined || current.pending.channel !== channel) return Effect.void
      cancelled.add(current.pending.id)
      return Fiber.interrupt(current.fiber)
    })
  // Messages an adapter that reads ahead gives as it reads them (keepOnRead):
  // journaled there, all of one read in one write, so that neither a stop nor
  // a kill loses what it read; each is put in order once the stream brings it.
  const journaledOnRead = new Map<InboundMessage, Pending>()
  const acceptAll = inbox.acceptAll
  if (interact.keepOnRead !== undefined && acceptAll !== undefined) {
    const context = yield* Effect.context<never>()
    const journal = Effect.runSyncExitWith(context)
    yield* interact.keepOnRead((read) => {
      // A cancel is no message: it acts when the stream brings it.
      const messages = read.every((message) => message.cancel !== true) ? read : read.filter((message) => message.cancel !== true)
      if (messages.length === 0) return
      const accepted = journal(acceptAll(messages))
      if (Exit.isSuccess(accepted)) {
        accepted.value.forEach((pending, at) => journaledOnRead.set(messages[at]!, pending))
        return
      }
      // A bug: then each is journaled when the stream brings it, as from any adapter.
      Effect.runForkWith(context)(Effect.logError("could not journal messages as they were read", accepted.cause))
    })
  }
  // Every message of the bridge's stream, journaled as it is read (if not already); the stream's end ends it.
  const take = (message: InboundMessage) => {
    if (message.cancel === true) return cancel(message.channel)
    const journaled = journaledOnRead.get(message)
    return journaled === undefined ? inbox.accept(message).pipe(Effect.map(put), Effect.catchDefect((defect) =>
      Effect.andThen(
        Effect.logError(`could not journal a message from channel ${shownChannel(message.channel)} (an internal error): it is answered with the apology`, defect),
        Effect.sync(() => put({ unjournaled: message }))
      ))) : Effect.sync(() => {
      journaledOnRead.delete(message)
      put(journaled)
    })
  }
  const readAll: Effect.Effect<void, InteractError> = Stream.runForEach(interact.messages, take)
  yield* readAll.pipe(
    Effect.catch((error) => Effect.logError(`the interact bridge stopped: ${error.message}`)),
    // A defect while reading is a bug, not the end of input: read again, after a pause that grows.
    Effect.catchDefect((defect) =>
      Effect.logError("reading from the interact bridge failed on an internal error; reading again", defect).pipe(
        Effect.andThen(Effect.fail(defect))
      )
    ),
    Effect.retry(intakeRestarts),
    Effect.ignore,
    Effect.ensuring(Effect.sync(() => put(undefined))),
    Effect.forkScoped
  )
  // The agent's outcome, delivered through the bridge (under the message's journal key: a reply
  // delivered again after a crash is the same reply, Discord's nonces), then marked delivered.
  const answered = (pending: Pending, outcome: Option.Option<TurnOutcome>) =>
    Option.isNone(outcome)
      ? agent.delivered(pending, outcome)
      : Effect.andThen(
        deliver(interact, { channel: pending.channel, text: outcome.value.reply, key: pending.key }),
        agent.delivered(pending, outcome)
      )
  // Closed in the journal as cancelled (never answered at a next start), then said so.
  const closeCancelled = (pending: Pending) =>
    Effect.andThen(
      (inbox.cancelled ?? inbox.delivered)(pending),
      deliver(interact, { channel: pending.channel, text: CANCELLED, key: pending.key })
    )
  // The turn runs in a fiber of its own, which a cancel interrupts; one that
  // ended before the interruption took hold is answered as usual.
  // An adapter that shows the turn as it goes gets its events, then the reply as usual.
  const show = interact.event
  // A channel no one watches is answered the plain way: no events made, the brain not asked for a stream.
  const respond = (pending: Pending): Effect.Effect<Option.Option<TurnOutcome>> =>
    show === undefined || interact.showsEvents?.(pending.channel) === false ? agent.respond(pending) : Effect.suspend(() => {
      let outcome: Option.Option<TurnOutcome> = Option.none()
      return agent.respondStreaming(pending).pipe(
        Stream.runForEach((event) => {
          if (event._tag !== "End") {
            // Only what is shown is lost when the adapter fails: the reply comes all the same.
            return show(pending.channel, event).pipe(
              Effect.catch((error) => Effect.logDebug(`could not show an event to channel ${shownChannel(pending.channel)}: ${error.message}`))
            )
          }
          const { _tag, ...decided } = event
          outcome = Option.some(decided)
          return Effect.void
        }),
        Effect.andThen(Effect.sync(() => outcome))
      )
    })
  const answer = (pending: Pending) =>
    Effect.flatMap(Effect.forkChild(respond(pending), { startImmediately: true }), (fiber) => {
      running = { pending, fiber }
      return Fiber.await(fiber).pipe(
        Effect.onInterrupt(() => Fiber.interrupt(fiber)),
        Effect.ensuring(Effect.sync(() => {
          running = undefined
        })),
        Effect.flatMap((exit) =>
          Exit.isSuccess(exit)
            ? answered(pending, exit.value)
            : cancelled.has(pending.id) && Exit.hasInterrupts(exit)
            ? closeCancelled(pending)
            : exit
        )
      )
    })
  while (true) {
    const pending = yield* next
    if (pending === undefined) return
    if ("unjournaled" in pending) {
      yield* deliver(interact, { channel: pending.unjournaled.channel, text: APOLOGY })
      continue
    }
    const settle = cancelled.has(pending.id) ? closeCancelled(pending) : answer(pending)
    answering = pending
    yield* settle.pipe(
      Effect.ensuring(Effect.sync(() => cancelled.delete(pending.id))),
      Effect.catchDefect((defect) =>
        Effect.logError("the agent loop hit an internal error and goes on", defect).pipe(
          Effect.andThen(interact.send({ channel: pending.channel, text: APOLOGY })),
          Effect.andThen(inbox.delivered(pending)),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.interrupt
              : Effect.logError("could not deliver the apology either", cause)
          )
        )
      )
    )
    answering = undefined
  }
})).pipe(Logging.toStderr)

/** Serving as a Layer: the loop runs for the Layer's lifetime. */
export const layer: Layer.Layer<never, never, Agent | Interact | Inbox> = Layer.effectDiscard(Effect.forkScoped(run))
