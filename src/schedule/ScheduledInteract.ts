/**
 * A host's interact bridge with the agent's schedule beside it: the
 * scheduled messages join the bridge's messages (so each is a turn like any
 * other: journaled by the intake, stored, compacted, counted in the usage
 * ledger) and their replies go to their destinations, not to the bridge.
 * The bridge's own end of input still ends the stream.
 */
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import type * as Latch from "effect/Latch"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { InboundMessage, InteractService } from "../ports/Interact.js"
import * as ScheduleDelivery from "./ScheduleDelivery.js"
import { formatInstant, sizeProblem } from "./ScheduleEntry.js"
import * as ScheduleRunner from "./ScheduleRunner.js"
import * as ScheduleStore from "./ScheduleStore.js"

export interface ScheduledOptions {
  readonly file: string
  readonly graceMs: number
  readonly pollMs: number
  readonly routes: ScheduleDelivery.Routes
  /** The agent's PLANCKCLAW_MAX_MESSAGE_BYTES: an entry whose message is over it is warned of when read. */
  readonly maxMessageBytes: number
  /** The latch the schedule tool signals a change on, when the host offers it. */
  readonly wake?: Latch.Latch | undefined
}

/** `near` with the schedule fired into it for the scope; `changed` makes the runner read the file again at once. */
export const withSchedule = (
  near: InteractService,
  options: ScheduledOptions
): Effect.Effect<{ readonly interact: InteractService; readonly changed: Effect.Effect<void> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const fired = yield* Queue.unbounded<InboundMessage>()
    // The occurrence each entry fired for and is not answered yet (every message gets a reply on its channel:
    // the turn's, or an apology). Another occurrence meanwhile (a model slower than the entry, or unreachable
    // for hours) is skipped and said, rather than queued behind it to be answered in a burst.
    const answering = new Map<string, number>()
    const runner = yield* ScheduleRunner.make({
      store: ScheduleRunner.fromStore(ScheduleStore.fileStore(options.file)),
      graceMs: options.graceMs,
      pollMs: options.pollMs,
      refusedMessage: (entry) => sizeProblem(entry, options.maxMessageBytes),
      fire: (entry, occurrenceMs) =>
        Effect.suspend(() => {
          const earlier = answering.get(entry.id)
          if (earlier !== undefined) return ScheduleRunner.skippedWhileAnswering(entry.id, earlier, occurrenceMs)
          answering.set(entry.id, occurrenceMs)
          return Effect.andThen(
            Effect.logDebug(`schedule ${entry.id}: firing for ${formatInstant(occurrenceMs)}`),
            Queue.offer(fired, { channel: ScheduleDelivery.channelOf(entry, occurrenceMs), text: ScheduleDelivery.messageOf(entry) })
          )
        })
    }, options.wake)
    yield* Effect.forkScoped(runner.run)
    // A webhook's delivery (retried, a slow receiver) runs beside the intake: the next message is not held up by
    // it; the scope's end waits for those in flight (a piped run's last reply). The others are quick, and in order.
    const deliveries = yield* FiberSet.make()
    yield* Effect.addFinalizer(() => FiberSet.awaitEmpty(deliveries))
    const deliver = (channel: string, text: string) =>
      Effect.suspend(() => {
        const named = ScheduleDelivery.parseChannel(channel)
        // Only the reply to the firing that is being answered ends it: not one to a firing recovered after a restart.
        if (named !== undefined && named.occurrenceMs !== undefined && answering.get(named.id) === named.occurrenceMs) {
          answering.delete(named.id)
        }
        return named?.to.startsWith("webhook:") === true
          ? Effect.asVoid(FiberSet.run(deliveries, ScheduleDelivery.deliver(options.routes, channel, text), { startImmediately: true }))
          : ScheduleDelivery.deliver(options.routes, channel, text)
      })
    const interact: InteractService = {
      ...near,
      messages: Stream.merge(near.messages, Stream.fromQueue(fired), { haltStrategy: "left" }),
      send: (message) =>
        ScheduleDelivery.parseChannel(message.channel) === undefined
          ? near.send(message)
          : deliver(message.channel, message.text),
      // A scheduled turn shows nothing as it goes on the bridge: its reply goes elsewhere.
      ...(near.event === undefined ? {} : {
        event: (channel, event) => ScheduleDelivery.parseChannel(channel) === undefined ? near.event!(channel, event) : Effect.void
      }),
      ...(near.accept === undefined ? {} : {
        accept: (message) =>
          ScheduleDelivery.parseChannel(message.channel) === undefined
            ? near.accept!(message)
            : Effect.as(deliver(message.channel, message.text), Effect.void)
      })
    }
    return { interact, changed: runner.changed }
  })
