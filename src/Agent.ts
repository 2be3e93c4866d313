/**
 * The agent: one accepted message from start to end. It journals the reply
 * it decided, runs the turn (Turn.ts) for a new message, or the command
 * (Commands.ts) for a slash command, remembers the exchange, delivers the
 * reply and compacts when due. Serving a bridge's stream of messages is
 * Intake.ts.
 */
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { AgentConfig } from "./AgentConfig.js"
import { Agent, type AgentService } from "./AgentService.js"
import { Brain } from "./Brain.js"
import * as CacheWindow from "./CacheWindow.js"
import { Claws } from "./Claws.js"
import * as Commands from "./Commands.js"
import { type InboundMessage, type InteractService, sanitize } from "./Interact.js"
import * as Logging from "./Logging.js"
import * as Compaction from "./memory/Compactor.js"
import { Compactor } from "./memory/Compactor.js"
import * as InboxStore from "./memory/Inbox.js"
import { Inbox, type Pending } from "./memory/Inbox.js"
import * as MemoryStore from "./memory/Memory.js"
import { type HistoryEntry, Memory } from "./memory/Memory.js"
import * as UsageLedger from "./memory/UsageLedger.js"
import * as Turn from "./Turn.js"
import * as Prices from "./usage/Prices.js"

export { Agent, type AgentService } from "./AgentService.js"
export { APOLOGY, type TurnOutcome } from "./Turn.js"

export const make = Effect.gen(function*() {
  const config = yield* AgentConfig
  // The turn's ports, captured once, so the service's methods need nothing.
  const ports = Context.make(Brain, yield* Brain).pipe(Context.add(Claws, yield* Claws))
  const memory = yield* Memory
  const compactor = yield* Compactor
  const inbox = yield* Inbox
  // Read once: a bad PLANCKCLAW_PRICES costs /usage its prices, not the agent its start.
  const prices = Either.mapLeft(yield* Effect.either(Prices.PricesConfig), (error) => error.message)

  // Where the cache-stable history window starts (CacheWindow); this process's alone.
  const anchor = yield* Ref.make<HistoryEntry | undefined>(undefined)
  const windowed = !config.promptCache
    ? memory.snapshot(config.historyKeep)
    : memory.snapshot(CacheWindow.linesToRead(config.historyKeep)).pipe(
      Effect.flatMap((snapshot) =>
        Ref.modify(anchor, (current) => {
          const window = CacheWindow.anchoredWindow(snapshot.history, config.historyKeep, current)
          return [{ ...snapshot, history: window.history }, window.anchor]
        })
      )
    )

  const command = Commands.make({
    claws: Context.get(ports, Claws),
    compactor,
    memory,
    prices,
    // After a forget: the cache window's anchor belongs to the old history, and
    // exchanges of the old conversation still waiting to be stored (a full disk) are dropped.
    forgotten: Effect.gen(function*() {
      yield* Ref.set(anchor, undefined)
      const waiting = yield* inbox.backlog
      yield* Effect.forEach(waiting, inbox.stored, { discard: true })
      if (waiting.length > 0) {
        yield* Effect.logWarning(`forget: dropped ${waiting.length} exchange(s) of the old conversation that could not be stored`)
      }
    })
  })

  const respond = (message: InboundMessage) =>
    windowed.pipe(
      Effect.flatMap((snapshot) => Turn.run({ snapshot, text: message.text, config })),
      Effect.provide(ports),
      Effect.catchAll((error) => Effect.logError(`turn failed: ${error.message}`).pipe(Effect.as(Turn.failed))),
      Effect.catchAllDefect((defect) =>
        Effect.logError("turn failed on an internal error; answered with an apology", defect).pipe(Effect.as(Turn.failed))
      )
    )

  const decide = (pending: Pending): Effect.Effect<Option.Option<Turn.TurnOutcome>> => {
    if (Option.isSome(pending.reply)) {
      const decided = pending.reply.value
      return Effect.succeed(Option.some({ reply: decided.text, stored: decided.stored }))
    }
    const size = Buffer.byteLength(pending.text, "utf8")
    if (size > config.maxMessageBytes) {
      return Effect.logWarning(`rejected a ${size}-byte message from ${pending.channel}`).pipe(
        Effect.as(Option.some({
          stored: false,
          reply: `Your message is ${size} bytes; the limit is ${config.maxMessageBytes} bytes ` +
            "(PLANCKCLAW_MAX_MESSAGE_BYTES). Nothing was processed: please send it in smaller parts."
        }))
      )
    }
    return Option.match(sanitize(pending.text), {
      onNone: () => Effect.succeed(Option.none()),
      onSome: (text) =>
        Option.match(Commands.parse(text), {
          // A command is answered here and is no exchange: nothing of it is stored.
          onSome: (parsed) => Effect.map(command(parsed), (reply): Turn.TurnOutcome => ({ reply, stored: false })),
          onNone: () => respond({ channel: pending.channel, text })
        }).pipe(
          Effect.tap((outcome) => inbox.answered(pending, outcome.reply, outcome.stored)),
          Effect.map(Option.some)
        )
    })
  }

  /**
   * Appends one exchange; true once history holds it. History knows it by
   * its journal key, so a reply decided before a crash is never stored twice,
   * and an identical later exchange still is.
   */
  const store = (pending: Pending, reply: string) => {
    const text = Option.getOrElse(sanitize(pending.text), () => pending.text)
    return memory.append(
      [{ role: "user", content: text }, { role: "assistant", content: reply }],
      pending.key !== undefined ? { exchange: pending.key } : { unlessLast: Option.isSome(pending.reply) }
    ).pipe(
      // Memory logs a failure to write once; anything else is logged here.
      Effect.tapError((error) =>
        error.reported === true ? Effect.void : Effect.logError(`could not remember an exchange: ${error.message}`)
      ),
      Effect.either,
      Effect.map(Either.isRight),
      Effect.tap((stored) => stored ? inbox.stored(pending) : Effect.void)
    )
  }

  /** Stores, oldest first, what earlier turns could not (a full disk); false while some still wait. */
  const storeBacklog = Effect.flatMap(inbox.backlog, (waiting) =>
    Effect.reduce(waiting, true, (clear, exchange) =>
      clear ? store(exchange, Option.match(exchange.reply, { onNone: () => "", onSome: (reply) => reply.text })) : Effect.succeed(false)))

  // The user gets the answer they were given either way; an exchange not
  // stored waits in the journal, behind any older one, to keep history in order.
  const remember = (pending: Pending, outcome: Turn.TurnOutcome) =>
    !outcome.stored ? Effect.void : Effect.gen(function*() {
      const stored = (yield* storeBacklog) && (yield* store(pending, outcome.reply))
      if (!stored) yield* inbox.unstored(pending, outcome.reply)
    })

  const handle = (pending: Pending, interact: InteractService) =>
    Effect.gen(function*() {
      const outcome = yield* decide(pending)
      if (Option.isSome(outcome)) {
        yield* remember(pending, outcome.value)
        yield* deliver(interact, { channel: pending.channel, text: outcome.value.reply })
      }
      yield* inbox.delivered(pending)
      if (Option.isSome(outcome) && outcome.value.stored) {
        yield* compactor.compactIfNeeded.pipe(
          Effect.catchAll((error) =>
            error._tag === "CompactionBusy"
              ? Effect.void
              : Effect.logWarning(`compaction did not run: ${error.message}; history is intact and it will be tried again`)
          )
        )
      }
    }).pipe(Effect.withSpan("Agent.handle", { captureStackTrace: false }))

  const deliver = (interact: InteractService, message: InboundMessage) =>
    interact.send(message).pipe(
      Effect.catchAll((error) =>
        Effect.logError(`could not deliver a reply to channel ${message.channel}: ${error.message}`)
      ),
      // A bridge bug must not cost the next message: the exchange is already remembered.
      Effect.catchAllDefect((defect) =>
        Effect.logError(`could not deliver a reply to channel ${message.channel}: ${String(defect)}`)
      )
    )

  // Exchanges a previous run answered but could not store are stored first.
  const waiting = (yield* inbox.backlog).length
  if (waiting > 0 && (yield* storeBacklog)) yield* Effect.logInfo(`stored ${waiting} exchange(s) a previous run could not store`)

  return { respond, handle } satisfies AgentService
})

// Logs of start-up (a stored backlog) go to stderr, as the intake loop's do.
export const layer: Layer.Layer<
  Agent,
  ConfigError.ConfigError,
  Brain | Claws | Memory | Compactor | Inbox
> = Layer.effect(Agent, Logging.toStderr(make))

/**
 * The agent with its memory (PLANCKCLAW_DIR), compaction and usage ledger: what a host
 * needs to provide is a Brain and Claws, then run `Intake.run` (or `serve`)
 * with an Interact.
 */
export const layerWithMemory: Layer.Layer<
  Agent | Compactor | Memory | Inbox,
  ConfigError.ConfigError | MemoryStore.MemoryError,
  Brain | Claws
> = layer.pipe(
  Layer.provideMerge(Compaction.layer),
  // Every answer the turns and the compactions get is counted in usage.jsonl.
  Layer.provide(UsageLedger.layer),
  Layer.provideMerge(Layer.merge(MemoryStore.layer, InboxStore.layer))
)

/** Serving a bridge's messages; the name embedding hosts know (see Intake.run). */
export { run as serve } from "./Intake.js"
