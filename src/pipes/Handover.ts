/**
 * How a built-in interact bridge and the agent, both in this process, agree
 * that a piped run is over. The wire has no end-of-input marker (interact_in
 * is held open, so it never shows end-of-file), so the two ends count lines
 * instead: the bridge says how many it forwarded once its input ended, the
 * agent ends its intake once it has read that many, finishes every message
 * and the work they started (delivery, compaction), and the run waits until
 * the bridge has delivered every reply the agent wrote.
 *
 * A reply counts as delivered for the agent (its inbox entry goes) only
 * once the bridge has it in its keeping (`kept`): written to a journal of
 * its own (Discord's outbox) or handed to its user, so a crash between the
 * pipe and the bridge never loses it.
 *
 * Replies are not counted against messages: a recovered message is answered
 * without having been forwarded in this run, and a refused line is answered
 * without reaching the agent's queue.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"

export interface Handover {
  /** Completed by the bridge with the number of lines it wrote to interact_in, once its input ended. */
  readonly forwarded: Deferred.Deferred<number>
  /** Lines the agent has taken from interact_in (messages, refused and malformed lines alike). */
  readonly read: SubscriptionRef.SubscriptionRef<number>
  /** Replies the agent has written to interact_out. */
  readonly written: Ref.Ref<number>
  /** Replies the bridge has taken from interact_out into its keeping (journaled, or handed to its user). */
  readonly kept: SubscriptionRef.SubscriptionRef<number>
  /** Replies the bridge has taken from interact_out and handed to its user. */
  readonly delivered: SubscriptionRef.SubscriptionRef<number>
  /**
   * The bridge shows a turn as it goes (the terminal): the agent writes its
   * events to interact_out before the reply (InteractLine.encodeEventLine).
   * Event lines are not counted as replies on either end.
   */
  readonly events: boolean
}

export const make = (options: { readonly events?: boolean } = {}): Effect.Effect<Handover> =>
  Effect.map(
    Effect.all({
      forwarded: Deferred.make<number>(),
      read: SubscriptionRef.make(0),
      written: Ref.make(0),
      kept: SubscriptionRef.make(0),
      delivered: SubscriptionRef.make(0)
    }),
    (counts) => ({ ...counts, events: options.events === true })
  )

const reach = (counter: SubscriptionRef.SubscriptionRef<number>, target: number): Effect.Effect<void> =>
  SubscriptionRef.changes(counter).pipe(Stream.takeUntil((n) => n >= target), Stream.runDrain)

/** Completes once the bridge's input has ended and the agent has read every line it forwarded. */
export const inputConsumed = (handover: Handover): Effect.Effect<void> =>
  Effect.flatMap(Deferred.await(handover.forwarded), (total) => reach(handover.read, total))

/** Completes once the bridge has the `count`th reply the agent wrote in its keeping. */
export const replyKept = (handover: Handover, count: number): Effect.Effect<void> => reach(handover.kept, count)

/** Completes once the bridge has delivered every reply the agent wrote so far. */
export const repliesDelivered = (handover: Handover): Effect.Effect<void> =>
  Effect.flatMap(Ref.get(handover.written), (total) => reach(handover.delivered, total))
