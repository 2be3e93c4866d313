/**
 * A message answered as it goes (the HTTP API's server-sent events): the
 * event sink a caller adds to its message, which the agent's mailbox fiber
 * fills with the turn's events (text, tool calls, their results) and ends
 * once the caller's reply is given; and the caller's side, reading it.
 */
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Agent from "../../agent/Agent.js"
import type * as Turn from "../../agent/Turn.js"
import type * as Inbox from "../../memory/Inbox.js"
import type { HostError } from "./HostError.js"

/** A caller's answer: the reply and whether the exchange is on disk. */
export interface Reply {
  readonly reply: string
  readonly stored: boolean
  /**
   * True for the answer of a turn cancelled by its key (TurnCancels.CANCELLED, whose words a model may also
   * write): told apart by this, never by its text.
   */
  readonly cancelled?: boolean | undefined
  /**
   * The turn's `notAnswered` (TurnOutcome): why the reply is no answer, where the agent (or the host, for a
   * turn it lost) said so; absent for an answer, whatever its words. Not kept under an Idempotency-Key.
   */
  readonly notAnswered?: Turn.NotAnswered | undefined
}

/** The reply to a message the agent could not answer (a start that failed, a defect, a hand-over lost). */
export const FAILED: Reply = { reply: Agent.APOLOGY, stored: false, notAnswered: "failed" }

/** A journaled message in the mailbox, with its caller's reply to complete and, when asked for, its event sink. */
export interface Waiting {
  readonly pending: Inbox.Pending
  readonly reply: Deferred.Deferred<Reply>
  readonly events?: EventSink | undefined
}

/** What a turn tells as it goes: its events but the End (the caller's reply says that). */
export type Told = Exclude<Turn.TurnEvent, { readonly _tag: "End" }>

/** Where a caller reads the turn's events as they come; ended once its reply is given. */
export type EventSink = Queue.Queue<Told, Cause.Done>

/** Gives a caller its reply, and ends its event sink after it: the sink's reader then reads the reply. */
export const answer = (waiting: Pick<Waiting, "reply" | "events">, reply: Reply) =>
  Effect.andThen(Deferred.succeed(waiting.reply, reply), waiting.events === undefined ? Effect.void : Queue.end(waiting.events))

/** Ends a sink whose message is answered without a turn of its own (a kept reply, one being made for another caller). */
export const endWithout = (events: EventSink | undefined) => events === undefined ? Effect.void : Effect.asVoid(Queue.end(events))

/** The agent's `respond`, its events told to `events` as the turn goes; the outcome is the End's. */
export const respondTelling = (agent: Agent.AgentService, pending: Inbox.Pending, events: EventSink) =>
  Effect.suspend(() => {
    let outcome: Option.Option<Turn.TurnOutcome> = Option.none()
    return Stream.runForEach(agent.respondStreaming(pending), (event) => {
      if (event._tag !== "End") return Effect.asVoid(Queue.offer(events, event))
      const { _tag, ...ended } = event
      outcome = Option.some(ended)
      return Effect.void
    }).pipe(Effect.map(() => outcome))
  })

/** A message being answered as it goes: the turn's events, then its reply. */
export interface Streaming {
  /** Ends before the reply is given. */
  readonly events: Stream.Stream<Told>
  readonly reply: Effect.Effect<Reply>
}

/**
 * Submits a message with a sink of its own. The agent stays started until
 * the reply is given, not until the caller goes (the host's submit holds it
 * from the message's acceptance): a caller that stops reading loses nothing.
 */
export const streaming = (
  submit: (events: EventSink) => Effect.Effect<Deferred.Deferred<Reply>, HostError, Scope.Scope>,
  awaitReply: (reply: Deferred.Deferred<Reply>) => Effect.Effect<Reply>
): Effect.Effect<Streaming, HostError> =>
  Effect.gen(function*() {
    const events = yield* Queue.unbounded<Told, Cause.Done>()
    const reply = yield* Effect.scoped(submit(events))
    // A caller gone: what the turn says next is not kept for nobody.
    const told = Stream.fromQueue(events).pipe(Stream.ensuring(Queue.shutdown(events)))
    return { events: told, reply: awaitReply(reply) }
  }).pipe(Effect.uninterruptible)
