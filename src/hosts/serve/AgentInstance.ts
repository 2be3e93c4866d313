/**
 * One running agent in the host: its parts (AgentParts: memory, inbox,
 * agent and compactor by Agent.makeFromPorts, the one composition of an
 * agent, under the agent's own settings), and a mailbox answering its
 * messages one at a time, in arrival order, by a fiber that runs only while
 * messages wait. Everything lives in the scope the host's LayerMap gives it:
 * closing it releases the fiber, the caches and the file handles (already
 * closed whenever the mailbox is empty).
 *
 * Each message goes into the mailbox with the Deferred its caller waits on
 * (`Waiting`), and its outcome is given to that Deferred. An instance stopped
 * by a defect hands the messages it had not answered, with their Deferreds,
 * to the next one (`handOver`), which reads them back from the journal and
 * answers them to the same callers. A caller reading the turn as it goes
 * (an SSE request) adds an event sink: the turn's events go to it as they
 * come, and it is ended once the reply is given (`answer`).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Turn from "../../agent/Turn.js"
import * as Logging from "../../runtime/Logging.js"
import * as Inbox from "../../memory/Inbox.js"
import type * as Memory from "../../memory/Memory.js"
import type { InstanceService, Message, Shared } from "./AgentInstanceService.js"
import * as AgentParts from "./AgentParts.js"
import { HostError } from "./HostError.js"
import * as IdempotencyStore from "./IdempotencyStore.js"
import * as KeysInFlight from "./KeysInFlight.js"
import * as TurnCancels from "./TurnCancels.js"
import { answer, endWithout, type EventSink, FAILED, type Reply, respondTelling, type Waiting } from "./TurnStream.js"

export { Instance, type InstanceService, type Message, type Shared } from "./AgentInstanceService.js"

/** A journaled message with the Deferred its caller (or callers, under one Idempotency-Key) waits on. */
export type { EventSink, Reply, Waiting } from "./TurnStream.js"

/** Which journal line a message is: how a message handed over is found again in the next instance's journal. */
const journalKey = (pending: Inbox.Pending) => pending.key ?? `unkeyed-${pending.id}`

/** The reply to a message the agent does not answer (a blank one): the caller still hears back. */
const NOTHING: Reply = { reply: "", stored: false }

/** A caller's reply of the agent's outcome: its `notAnswered` only where it has one. */
const replyOf = ({ notAnswered, reply, stored }: Turn.TurnOutcome): Reply =>
  notAnswered === undefined ? { reply, stored } : { reply, stored, notAnswered }

/** The reply to a message whose turn was cancelled by its key. */
const CANCELLED: Reply = { reply: TurnCancels.CANCELLED, stored: false, cancelled: true }

/**
 * The journal's recovered messages, each with its caller: the one handed
 * over for its journal line, else a new Deferred. A caller handed over but
 * not in the journal (it cannot be: it was journaled and not delivered)
 * still hears back. A function of its own: the Map lives through the start
 * only, not in the context every closure of the instance keeps.
 */
const waitersOf = (
  recovered: ReadonlyArray<Inbox.Pending>,
  handedOver: ReadonlyArray<Waiting>,
  waiting: (pending: Inbox.Pending, reply: Deferred.Deferred<Reply>, events?: EventSink) => Waiting
): Effect.Effect<Array<Waiting>> =>
  Effect.gen(function*() {
    const callers = new Map(handedOver.map((left) => [journalKey(left.pending), left]))
    const found = yield* Effect.forEach(recovered, (pending) =>
      Effect.suspend(() => {
        const handed = callers.get(journalKey(pending))
        callers.delete(journalKey(pending))
        return handed === undefined
          ? Effect.map(Deferred.make<Reply>(), (reply) => waiting(pending, reply))
          : Effect.succeed(waiting(pending, handed.reply, handed.events))
      }))
    yield* Effect.forEach(callers.values(), (left) => answer(left, FAILED), { discard: true })
    return found
  })

export const make = (options: {
  readonly id: string
  readonly directory: string
  readonly shared: Shared
  /** What the instance before this one, stopped by a defect, had not answered (its `handOver`). */
  readonly handedOver: ReadonlyArray<Waiting>
  /** Called after a defect escaped a message: the host replaces this instance. */
  readonly restart: Effect.Effect<void>
  /** Its directory was made by this start: none of the files a start reads or checks (config.env, mcp.json, ...) is looked for. */
  readonly fresh?: boolean | undefined
}): Effect.Effect<InstanceService, HostError, Scope.Scope> =>
  Effect.gen(function*() {
    const { directory, id, shared } = options
    const fresh = options.fresh === true
    const notJournaled = (error: Memory.MemoryError) =>
      new HostError({
        reason: Inbox.noRoom(error) ? "no-space" : "unavailable",
        id,
        message: `agent ${id}: ${Inbox.noRoom(error) ? "the disk is full: " : ""}${error.message}; ` +
          "nothing was processed: send it again once it can be written"
      })
    // Its parts, made from its directory and the host's (AgentParts).
    const { agent, closeFiles, compactor, idempotency, inbox, overOwnLimit } = yield* AgentParts.make({ id, directory, shared, fresh })

    // The messages being answered, by Idempotency-Key: a request sent again under one waits for its reply.
    const inFlight = KeysInFlight.make<Reply>()
    const cancels = TurnCancels.make()
    const waiting = (pending: Inbox.Pending, reply: Deferred.Deferred<Reply>, events?: EventSink): Waiting => {
      const key = pending.idempotencyKey
      if (key !== undefined) inFlight.add(key, IdempotencyStore.requestOf(pending), reply)
      if (key !== undefined) cancels.queued(key)
      return { pending, reply, events }
    }

    /** Gives the caller its reply, after recording it under its Idempotency-Key (once: a later outcome is dropped). */
    const finish = (next: Waiting, reply: Reply) =>
      Effect.gen(function*() {
        const { pending, reply: deferred } = next
        if (yield* Deferred.isDone(deferred)) return yield* answer(next, reply)
        const key = pending.idempotencyKey
        if (key !== undefined) {
          // A failure or a cancel is not kept: the retry its reply asks for (the key sent again) must get a turn.
          if (!Turn.isFailureReply(reply.reply) && reply.cancelled !== true) {
            yield* idempotency.remember(key, { ...reply, request: IdempotencyStore.requestOf(pending) })
          }
          inFlight.settle(key, deferred)
        }
        yield* answer(next, reply)
      })

    // The journal holds what the instance before left unanswered; its callers' Deferreds come with the hand-over.
    const recoveredWaiting = yield* waitersOf(inbox.recovered, options.handedOver, waiting)
    const recovered = recoveredWaiting.map((left) => left.reply)
    if (recovered.length > 0) {
      yield* Effect.logInfo(`agent ${id}: answering ${recovered.length} message(s) left unanswered by the previous run`)
    }

    // The agent's outcome goes to its caller (recorded under its Idempotency-Key), then the agent lets it go.
    const answerOne = (next: Waiting) =>
      Effect.gen(function*() {
        const { pending } = next
        const ran = yield* cancels.run(pending.idempotencyKey, next.events === undefined ? agent.respond(pending) : respondTelling(agent, pending, next.events))
        if (Option.isNone(ran)) {
          // Cancelled: nothing was stored, and the journal lets the message go.
          yield* finish(next, CANCELLED)
          yield* inbox.delivered(pending)
          return true
        }
        const outcome = ran.value
        yield* finish(next, Option.match(outcome, { onNone: () => NOTHING, onSome: replyOf }))
        yield* agent.delivered(pending, outcome)
        return true
      }).pipe(
        Effect.catchDefect((defect) =>
          Effect.gen(function*() {
            yield* Effect.logError(`agent ${id} hit an internal error; it answers with an apology and restarts`, defect)
            yield* finish(next, FAILED)
            yield* inbox.delivered(next.pending)
            return false
          })
        )
      )

    // Its files stay open while it is among the agents used most recently
    // (OpenFiles), so thousands of idle agents hold no descriptors.
    const holder = {}
    yield* Effect.addFinalizer(() => Effect.sync(() => shared.openFiles.forget(holder)))
    // Started again, it holds the journal it read (Inbox): counted among the agents keeping files from now.
    if (!fresh) yield* shared.openFiles.used(holder, closeFiles)

    // The mailbox: a fiber runs only while messages wait (an idle agent costs
    // no fiber), answering them one at a time in arrival order.
    const scope = yield* Effect.scope
    const mailbox = yield* Queue.unbounded<Waiting>()
    Queue.offerAllUnsafe(mailbox, recoveredWaiting)
    let draining = false
    let stopped = false
    let drainer: Fiber.Fiber<void> | undefined
    // Taken and `draining` cleared in one step: a message offered meanwhile wakes a new fiber.
    const takeNext = Effect.sync(() => {
      const taken = Queue.takeUnsafe(mailbox)
      if (taken === undefined) draining = false
      return taken === undefined || taken._tag === "Failure" ? undefined : taken.value
    })
    const drain: Effect.Effect<void> = Effect.gen(function*() {
      for (let next = yield* takeNext; next !== undefined; next = yield* takeNext) {
        if (!(yield* answerOne(next))) {
          stopped = true
          return yield* options.restart
        }
      }
      yield* shared.openFiles.used(holder, closeFiles)
    }).pipe(Effect.annotateLogs("agent", id), Logging.toStderr)
    const wake = Effect.suspend(() => {
      if (draining || stopped || Queue.sizeUnsafe(mailbox) === 0) return Effect.void
      draining = true
      // Interruptible though submit is not: a fork inherits that, and a turn's timeouts (the brain's
      // attempts, a claw's limit) work by interrupting what they bound.
      return Effect.flatMap(Effect.forkIn(Effect.interruptible(drain), scope), (fiber) =>
        Effect.sync(() => {
          drainer = fiber
          // An idle agent keeps no ended fiber.
          fiber.addObserver(() => {
            if (drainer === fiber) drainer = undefined
          })
        }))
    })
    const quiet = Effect.suspend(() => drainer === undefined ? Effect.void : Fiber.await(drainer)).pipe(
      Effect.andThen(compactor.settled)
    )
    yield* wake

    // One submission at a time: the key checks, the journal and the queue agree on the order.
    const door = yield* Semaphore.make(1)
    const reused = (key: string) => new HostError({ reason: "key-reused", id, message: IdempotencyStore.reusedKey(key) })
    const submit = (message: Message, events?: EventSink) =>
      Effect.gen(function*() {
        if (stopped) return Option.none()
        const tooLarge = overOwnLimit?.(message.text)
        if (tooLarge !== undefined) return yield* tooLarge
        // Answered without a turn of its own: the caller reads the reply alone.
        const without = (reply: Deferred.Deferred<Reply>) => Effect.as(endWithout(events), Option.some(reply))
        const key = message.idempotencyKey
        if (key !== undefined) {
          const request = IdempotencyStore.requestOf(message)
          const done = idempotency.lookup(key)
          if (Option.isSome(done)) {
            // Lines written before the message was kept with its reply cannot tell: they answer.
            if (done.value.request !== undefined && done.value.request !== request) return yield* reused(key)
            const answered = yield* Deferred.make<Reply>()
            yield* Deferred.succeed(answered, { reply: done.value.reply, stored: done.value.stored })
            return yield* without(answered)
          }
          const joined = inFlight.join(key, request)
          if (Result.isFailure(joined)) return yield* reused(key)
          if (Option.isSome(joined.success)) return yield* without(joined.success.value)
        }
        // Journaled before anything else: from here a crash does not lose it. Not taken when it cannot be.
        const pending = yield* inbox.acceptJournaled(message).pipe(Effect.mapError(notJournaled))
        const next = waiting(pending, yield* Deferred.make<Reply>(), events)
        Queue.offerUnsafe(mailbox, next)
        // Ten thousand agents sent a message at once keep the journals of the last few open, not ten thousand.
        yield* shared.openFiles.used(holder, closeFiles)
        yield* wake
        return Option.some(next.reply)
      }).pipe(door.withPermits(1), Effect.uninterruptible)

    // Under the door: a submission in progress ends first, and any after it finds the instance stopped.
    const handOver = Effect.sync(() => {
      if (!stopped) return []
      const left: Array<Waiting> = []
      for (let taken = Queue.takeUnsafe(mailbox); taken !== undefined && taken._tag === "Success"; taken = Queue.takeUnsafe(mailbox)) {
        left.push(taken.value)
      }
      return left
    }).pipe(door.withPermits(1))

    return { submit, recovered, compactNow: compactor.compactNow, quiet, handOver, cancel: cancels.cancel } satisfies InstanceService
  })
