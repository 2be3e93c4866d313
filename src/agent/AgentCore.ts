/**
 * The agent: one accepted message to its outcome. It runs the turn
 * (Turn.ts) for a new message, or the command (Commands.ts) for a slash
 * command, journals the reply it decided, remembers the exchange and
 * returns the outcome (reply, stored, tool calls, usage) for its transport
 * to deliver; once delivered, it compacts when due. Serving a bridge's
 * stream of messages is Intake.ts; its composition into layers,
 * Agent.ts.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { agentConfig } from "../config/AgentConfig.js"
import type { AgentService } from "./AgentService.js"
import { Brain } from "../ports/Brain.js"
import * as CacheWindow from "./CacheWindow.js"
import { Claws } from "../ports/Claws.js"
import * as Commands from "./SlashCommands.js"
import { isBlank, sanitize } from "../ports/Interact.js"
import { Compactor } from "./Compactor.js"
import { Inbox, type Pending } from "../memory/Inbox.js"
import * as MemoryStore from "../memory/Memory.js"
import { type HistoryEntry, Memory, type MemorySnapshot } from "../memory/Memory.js"
import { promptMemo } from "./Prompt.js"
import * as Tracing from "../runtime/Tracing.js"
import * as Turn from "./Turn.js"
import { TurnCommit } from "./TurnCommit.js"
import * as Prices from "../usage/Prices.js"
import { shownChannel } from "../runtime/ShownUrl.js"
import { loneSurrogateRefusal } from "../runtime/WellFormed.js"

/** The reply to a message that held only control characters (which are removed from every message). */
export const ONLY_CONTROLS = "Your message held only control characters, which are removed: nothing was processed."

export const make = Effect.gen(function*() {
  const config = yield* agentConfig
  // The turn's ports, captured once, so the service's methods need nothing.
  const brain = yield* Brain
  const claws = yield* Claws
  const ports: Turn.TurnPorts = { brain, claws, prompt: promptMemo() }
  const memory = yield* Memory
  const compactor = yield* Compactor
  const inbox = yield* Inbox
  // Read once (or as the host read it): a bad PLANCKCLAW_PRICES costs /usage its prices, not the agent its start.
  const prices = Result.mapError(yield* Effect.result(Prices.priceTable), (error) => error.message)

  // Where the cache-stable history window starts (CacheWindow); this process's alone.
  let anchor: HistoryEntry | undefined
  const windowed = !config.promptCache
    ? memory.snapshot(config.historyKeep)
    : Effect.map(memory.snapshot(CacheWindow.linesToRead(config.historyKeep)), (snapshot): MemorySnapshot => {
      const window = CacheWindow.anchoredWindow(snapshot.history, config.historyKeep, anchor)
      anchor = window.anchor
      return { ...snapshot, history: window.history }
    })

  // Closed normally (a piped run's end, serve releasing an idle agent), the
  // agent's scope waits for its compaction in flight, so none is lost. On
  // shutdown it is interrupted, as an inline one was: the scope closed by an
  // interruption, or closed normally by an interrupted fiber (serve's agents
  // on SIGTERM), whose interruptible wait ends at once; a signal during the
  // wait ends it too. The commit itself is never cut (uninterruptible), and
  // a kill at any instant loses nothing either way. The interruption that ends
  // the wait is taken here (Effect.exit): passed on, it ended the closing of
  // everything after it, in serve every agent but the first on SIGTERM.
  yield* Effect.addFinalizer((exit) =>
    Exit.hasInterrupts(exit)
      ? compactor.stop
      : Effect.interruptible(compactor.settled).pipe(Effect.onInterrupt(() => compactor.stop), Effect.exit, Effect.asVoid)
  )

  const command = Commands.make({
    claws,
    compactor,
    // A forget waits for this agent's compaction in flight, which would otherwise fail on the archived history.
    memory: { ...memory, forget: (stamp) => Effect.andThen(compactor.settled, memory.forget(stamp)) },
    prices,
    // After a forget: the cache window's anchor belongs to the old history, and
    // exchanges of the old conversation still waiting to be stored (a full disk) are dropped.
    forgotten: Effect.gen(function*() {
      anchor = undefined
      const waiting = yield* inbox.backlog
      yield* Effect.forEach(waiting, inbox.stored, { discard: true })
      if (waiting.length > 0) {
        yield* Effect.logWarning(`forget: dropped ${waiting.length} exchange(s) of the old conversation that could not be stored`)
      }
    })
  })

  const runTurn = (text: string, onEvent?: Turn.TurnListener): Effect.Effect<Turn.TurnOutcome> =>
    Effect.flatMap(windowed, (snapshot) => Turn.runWith(ports, { snapshot, text, config, onEvent })).pipe(
      Effect.catch((error) =>
        Effect.logError(`turn failed: ${error.message}`).pipe(
          // A file to fix (a soul over its limit) is said as such: asking again would meet it again.
          Effect.as(
            error.problem === undefined
              ? Turn.failed
              : Turn.withoutTurn({ reply: Turn.memoryUnusableReply(error.problem), stored: false, notAnswered: "failed" })
          )
        )
      ),
      Effect.catchDefect((defect) =>
        Effect.logError("turn failed on an internal error; answered with an apology", defect).pipe(Effect.as(Turn.failed))
      )
    )

  /**
   * `commit` (journaling or storing a decided reply) kept whole, begun only
   * if no cancel came first (TurnCommit); otherwise the turn waits for the
   * cancel's interruption, and nothing of the reply is written.
   */
  const committing = <A>(commit: Effect.Effect<A>): Effect.Effect<A> =>
    Effect.flatMap(Effect.service(TurnCommit), (mayCommit) => mayCommit() ? Effect.uninterruptible(commit) : Effect.never)

  /**
   * Decides the reply to `pending`, journals it when it is new, and goes on
   * with `then`; `none` when there is nothing to answer. Continued rather
   * than returned as an Option: a step fewer and no Option per turn.
   */
  const decide = <A>(
    pending: Pending,
    then: (outcome: Turn.TurnOutcome) => Effect.Effect<A>,
    none: () => Effect.Effect<A>,
    onEvent?: Turn.TurnListener
  ): Effect.Effect<A> => {
    if (Option.isSome(pending.reply)) {
      // Decided before a restart: the journal keeps its text and `stored`, not
      // `notAnswered` (a bridge goes by the text; serve's ask_agent takes it for an answer).
      const decided = pending.reply.value
      return then(Turn.withoutTurn({ reply: decided.text, stored: decided.stored }))
    }
    const size = Buffer.byteLength(pending.text, "utf8")
    if (size > config.maxMessageBytes) {
      return Effect.flatMap(Effect.logWarning(`rejected a ${size}-byte message from ${shownChannel(pending.channel)}`), () =>
        then(Turn.withoutTurn({
          stored: false,
          notAnswered: "refused",
          reply: `Your message is ${size} bytes; the limit is ${config.maxMessageBytes} bytes ` +
            "(PLANCKCLAW_MAX_MESSAGE_BYTES). Nothing was processed: please send it in smaller parts."
        })))
    }
    // Refused whatever the bridge (Discord, HTTP, an embedding host): the model's API would refuse it, every turn.
    const refusal = loneSurrogateRefusal(pending.text)
    if (refusal !== undefined) {
      return Effect.flatMap(Effect.logWarning(`refused a message from ${shownChannel(pending.channel)} holding a lone UTF-16 surrogate`), () =>
        then(Turn.withoutTurn({ stored: false, notAnswered: "refused", reply: refusal })))
    }
    return Option.match(sanitize(pending.text), {
      // Blank: no reply. Control characters alone: refused, so a bridge waiting for a reply gets one.
      onNone: () =>
        isBlank(pending.text) ? none() : then(Turn.withoutTurn({ stored: false, notAnswered: "refused", reply: ONLY_CONTROLS })),
      onSome: (text) =>
        Effect.flatMap(
          Option.match(Commands.parse(text), {
            // A command is answered here and is no exchange: nothing of it is stored.
            onSome: (parsed) => Effect.map(command(parsed), (reply) => Turn.withoutTurn({ reply, stored: false })),
            onNone: () => runTurn(text, onEvent)
          }),
          // Once decided, the reply is journaled and kept whole: a cancel (an interruption) ends the turn before, never here.
          (outcome) => committing(Effect.flatMap(inbox.answered(pending, outcome.reply, outcome.stored), () => then(outcome)))
        )
    })
  }

  /**
   * Appends one exchange. History knows it by its journal key, so a reply
   * decided before a crash is never stored twice, and an identical later
   * exchange still is.
   */
  const append = (pending: Pending, reply: string) => {
    const text = Option.getOrElse(sanitize(pending.text), () => pending.text)
    return memory.append(
      [{ role: "user", content: text }, { role: "assistant", content: reply }],
      pending.key !== undefined ? { exchange: pending.key } : { unlessLast: Option.isSome(pending.reply) }
    )
  }
  // Memory logs a failure to write once; anything else is logged here.
  const notAppended = (error: MemoryStore.MemoryError) =>
    error.reported === true ? Effect.void : Effect.logError(`could not remember an exchange: ${error.message}`)

  /** Appends one exchange; true once history holds it. */
  const store = (pending: Pending, reply: string): Effect.Effect<boolean> =>
    Effect.matchEffect(append(pending, reply), {
      onFailure: (error) => Effect.as(notAppended(error), false),
      onSuccess: () => Effect.as(inbox.stored(pending), true)
    })

  /** Appends one exchange, or keeps it in the journal as not stored; true once either holds it on disk. */
  const storeOrKeep = (pending: Pending, reply: string): Effect.Effect<boolean> =>
    Effect.matchEffect(append(pending, reply), {
      onFailure: (error) => Effect.andThen(notAppended(error), inbox.unstored(pending, reply)),
      onSuccess: () => Effect.as(inbox.stored(pending), true)
    })

  /** Stores, oldest first, what earlier turns could not (a full disk); false while some still wait. */
  const storeBacklog = Effect.flatMap(inbox.backlog, (waiting) =>
    waiting.length === 0 ? Effect.succeed(true) : Effect.reduce(waiting, () => true, (clear: boolean, exchange) =>
      clear ? store(exchange, Option.match(exchange.reply, { onNone: () => "", onSome: (reply) => reply.text })) : Effect.succeed(false)))

  // The user gets the answer they were given either way; an exchange not
  // stored waits in the journal, behind any older one, to keep history in
  // order. True once the exchange is on disk (history or the journal).
  const remember = (pending: Pending, outcome: Turn.TurnOutcome): Effect.Effect<boolean> =>
    !outcome.stored ? Effect.succeed(false) : Effect.flatMap(storeBacklog, (clear) =>
      clear ? storeOrKeep(pending, outcome.reply) : inbox.unstored(pending, outcome.reply))

  /** The outcome, remembered: `stored` says whether the exchange is on disk. */
  const remembered = (pending: Pending, outcome: Turn.TurnOutcome): Effect.Effect<Option.Option<Turn.TurnOutcome>> =>
    Effect.map(remember(pending, outcome), (onDisk) => Option.some(onDisk === outcome.stored ? outcome : { ...outcome, stored: onDisk }))

  const nothing = () => Effect.succeedNone

  // Composed step by step, not with Effect.gen, for the same reason as Turn.runWith.
  const respond = (pending: Pending): Effect.Effect<Option.Option<Turn.TurnOutcome>> =>
    compactor.turn(Effect.withFiber((fiber) =>
      Tracing.span(
        decide(pending, (outcome) => committing(remembered(pending, outcome)), nothing),
        Tracing.recording(fiber),
        "Agent.respond"
      )
    ))

  /** `respond`, telling `onEvent` what the turn does as it goes, then its outcome (End) once remembered. */
  const respondListening = (pending: Pending, onEvent: Turn.TurnListener): Effect.Effect<Option.Option<Turn.TurnOutcome>> =>
    compactor.turn(Effect.withFiber((fiber) =>
      Tracing.span(
        decide(
          pending,
          // Kept whole, as in `respond`: a cancel ends the turn before this, never here.
          (outcome) =>
            committing(
              Effect.tap(remembered(pending, outcome), (kept) => Option.isSome(kept) ? onEvent({ _tag: "End", ...kept.value }) : Effect.void)
            ),
          nothing,
          onEvent
        ),
        Tracing.recording(fiber),
        "Agent.respond"
      )
    ))

  const respondStreaming = (pending: Pending): Stream.Stream<Turn.TurnEvent> =>
    Stream.callback<Turn.TurnEvent>((queue) =>
      Effect.andThen(respondListening(pending, (event) => Effect.asVoid(Queue.offer(queue, event))), Queue.end(queue))
    )

  /**
   * Once the reply is delivered: the journal lets the message go, and a due
   * compaction starts in the background when the exchange was stored, so the
   * next message is taken at once, not after the compaction. A turn running
   * beside it reads recent history and a summary, and sees the old summary or
   * the new one; either is right. The fold takes only lines older than the
   * last HISTORY_KEEP when it was planned, and history only grows meanwhile,
   * so the window a turn reads is kept whole by the commit: with the old
   * summary the prompt is what it was before the compaction, with the new one
   * what it is after (the commit renames summary before history, as for a
   * `planckclaw compact` of another process).
   */
  const delivered = (pending: Pending, outcome: Option.Option<Turn.TurnOutcome>): Effect.Effect<void> =>
    Option.isSome(outcome) && outcome.value.stored
      ? Effect.andThen(inbox.delivered(pending), compactor.startIfNeeded)
      : inbox.delivered(pending)

  // Exchanges a previous run answered but could not store are stored first.
  const waiting = (yield* inbox.backlog).length
  if (waiting > 0 && (yield* storeBacklog)) yield* Effect.logInfo(`stored ${waiting} exchange(s) a previous run could not store`)

  return { respond, respondStreaming, delivered } satisfies AgentService
})
