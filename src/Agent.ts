/**
 * The agent: one turn per message, in arrival order. A turn reads memory,
 * discovers tools, asks the brain, runs every tool call of every round,
 * remembers the exchange and answers. It depends only on the ports.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { AgentConfig } from "./AgentConfig.js"
import {
  Brain,
  type BrainError,
  type Message,
  type MessagesResponse,
  type TextBlock,
  type ToolResultBlock,
  type ToolUseBlock
} from "./Brain.js"
import { Claws, type ToolDefinition } from "./Claws.js"
import * as Compaction from "./memory/Compactor.js"
import { Compactor } from "./memory/Compactor.js"
import * as InboxStore from "./memory/Inbox.js"
import { Inbox, type Pending } from "./memory/Inbox.js"
import { type InboundMessage, Interact, sanitize } from "./Interact.js"
import * as MemoryStore from "./memory/Memory.js"
import { Memory } from "./memory/Memory.js"
import { conversation, systemPrompt, turnRequest } from "./Prompt.js"

/** The original's words, for any turn the brain could not complete. */
export const APOLOGY = "I'm temporarily unavailable. Please try again shortly."

/** A turn's reply, and whether the exchange belongs in history (failed turns store nothing). */
export interface TurnOutcome {
  readonly reply: string
  readonly stored: boolean
}

export interface AgentService {
  /** Runs one turn. Never fails: failures become replies that are not stored. */
  readonly respond: (message: InboundMessage) => Effect.Effect<TurnOutcome>
  /**
   * Takes one accepted message to the end: validates it, answers it (or
   * finishes a reply decided before a crash), remembers the exchange,
   * delivers it, and compacts if due.
   */
  readonly handle: (message: Pending) => Effect.Effect<void, never, Interact>
}

export class Agent extends Context.Tag("planckclaw/Agent")<Agent, AgentService>() {}

const textOf = (response: MessagesResponse): string =>
  response.content.flatMap((block) => block.type === "text" && "text" in block ? [block.text] : []).join("")

const toolUsesOf = (response: MessagesResponse): Array<ToolUseBlock> =>
  response.content.filter((block): block is ToolUseBlock => block.type === "tool_use" && "id" in block)

/** What the assistant said, as it must be echoed back in the next round. */
const assistantTurn = (response: MessagesResponse): Message => ({
  role: "assistant",
  content: response.content.flatMap((block): Array<TextBlock | ToolUseBlock> =>
    block.type === "tool_use" && "id" in block
      ? [block as ToolUseBlock]
      : block.type === "text" && "text" in block
      ? [{ type: "text" as const, text: block.text }]
      : []
  )
})

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const describe = (value: unknown): string => Array.isArray(value) ? "an array" : value === null ? "null" : `a ${typeof value}`

export const make = Effect.gen(function*() {
  const config = yield* AgentConfig
  const brain = yield* Brain
  const claws = yield* Claws
  const memory = yield* Memory
  const compactor = yield* Compactor
  const inbox = yield* Inbox
  const failed: TurnOutcome = { reply: APOLOGY, stored: false }

  const discoverTools = claws.list.pipe(
    Effect.map((catalog) => catalog.tools),
    Effect.catchAll((error) =>
      Effect.logWarning(`tool discovery failed, answering without tools: ${error.message}`).pipe(
        Effect.as<ReadonlyArray<ToolDefinition>>([])
      )
    )
  )

  const runTool = (call: ToolUseBlock): Effect.Effect<ToolResultBlock> => {
    if (!isObject(call.input)) {
      return Effect.succeed({
        type: "tool_result",
        tool_use_id: call.id,
        content: `Tool input must be a JSON object, got ${describe(call.input)}`,
        is_error: true
      })
    }
    return claws.call(call.name, call.input).pipe(
      Effect.map((result): ToolResultBlock => ({
        type: "tool_result",
        tool_use_id: call.id,
        content: result.content,
        ...(result.isError ? { is_error: true } : {})
      })),
      Effect.catchAll((error) =>
        Effect.succeed<ToolResultBlock>({
          type: "tool_result",
          tool_use_id: call.id,
          content: `Tool ${call.name} could not run: ${error.message}`,
          is_error: true
        })
      )
    )
  }

  const unavailable = (error: BrainError) =>
    Effect.logWarning(`brain gave up (${error.reason}): ${error.detail}`).pipe(Effect.as(failed))

  const converse = (text: string) =>
    Effect.gen(function*() {
      const snapshot = yield* memory.snapshot(config.historyKeep)
      const tools = yield* discoverTools
      const messages = conversation(snapshot.history, text)
      const request = (current: ReadonlyArray<Message>) =>
        turnRequest({
          model: config.model,
          maxTokens: config.maxTokens,
          system: systemPrompt(snapshot.soul, snapshot.summary),
          messages: current,
          tools
        })

      for (let round = 0;; round++) {
        const response = yield* brain.complete(request(messages))
        const calls = toolUsesOf(response)
        if (response.stop_reason !== "tool_use" || calls.length === 0) return finalReply(response)
        if (round >= config.maxToolRounds) {
          return {
            stored: false,
            reply: `I stopped after ${config.maxToolRounds} rounds of tool calls without reaching an answer. ` +
              "Please try again, perhaps with a narrower question."
          } satisfies TurnOutcome
        }
        // Every call of the round, in order, answered in one user message.
        const results = yield* Effect.forEach(calls, runTool)
        messages.push(assistantTurn(response), { role: "user", content: results })
      }
    }).pipe(Effect.catchTag("BrainError", unavailable))

  const finalReply = (response: MessagesResponse): TurnOutcome => {
    const text = textOf(response).trim()
    const cut = response.stop_reason === "max_tokens"
    if (text.length === 0) {
      return {
        stored: false,
        reply: cut
          ? "My answer was cut off before I could write anything (the model hit its token limit)."
          : "I have no answer to that (the model returned an empty reply). Please try rephrasing."
      }
    }
    return { stored: true, reply: cut ? `${text}\n\n[answer cut short: the model hit its token limit]` : text }
  }

  const respond = (message: InboundMessage) =>
    converse(message.text).pipe(
      Effect.catchAll((error) => Effect.logError(`turn failed: ${error.message}`).pipe(Effect.as(failed))),
      Effect.catchAllDefect((defect) =>
        Effect.logError("turn failed on an internal error; answered with an apology", defect).pipe(Effect.as(failed))
      ),
      Effect.withSpan("Agent.respond")
    )

  const decide = (pending: Pending): Effect.Effect<Option.Option<TurnOutcome>> => {
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
        respond({ channel: pending.channel, text }).pipe(
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
  const remember = (pending: Pending, outcome: TurnOutcome) =>
    !outcome.stored ? Effect.void : Effect.gen(function*() {
      const stored = (yield* storeBacklog) && (yield* store(pending, outcome.reply))
      if (!stored) yield* inbox.unstored(pending, outcome.reply)
    })

  const handle = (pending: Pending) =>
    Effect.gen(function*() {
      const interact = yield* Interact
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
    })

  const deliver = (interact: Interact["Type"], message: InboundMessage) =>
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

export const layer: Layer.Layer<
  Agent,
  import("effect/ConfigError").ConfigError,
  Brain | Claws | Memory | Compactor | Inbox
> = Layer.effect(Agent, make)

/**
 * The agent with its memory (PLANCKCLAW_DIR) and compaction: what a host
 * needs to provide is a Brain and Claws, then run `serve` with an Interact.
 */
export const layerWithMemory: Layer.Layer<
  Agent | Compactor | Memory | Inbox,
  import("effect/ConfigError").ConfigError | MemoryStore.MemoryError,
  Brain | Claws
> = layer.pipe(
  Layer.provideMerge(Compaction.layer),
  Layer.provideMerge(Layer.merge(MemoryStore.layer, InboxStore.layer))
)

/** Restarts of a bridge's message stream after a defect: quick at first, then every 30 s at most. */
const intakeRestarts = Schedule.exponential("100 millis").pipe(
  Schedule.union(Schedule.spaced("30 seconds")),
  Schedule.jittered
)

/**
 * Answers the bridge's messages one at a time, in order, until its stream
 * ends. Messages are journaled as soon as they are read, so what arrives
 * during a turn waits in order and survives a crash. A defect in one turn is
 * logged and answered; the loop goes on.
 */
export const serve: Effect.Effect<void, never, Agent | Interact | Inbox> = Effect.scoped(Effect.gen(function*() {
  const agent = yield* Agent
  const interact = yield* Interact
  const inbox = yield* Inbox
  const queue = yield* Queue.unbounded<Option.Option<Pending>>()
  if (inbox.recovered.length > 0) {
    yield* Effect.logInfo(`answering ${inbox.recovered.length} message(s) left unanswered by the previous run`)
  }
  yield* Queue.offerAll(queue, inbox.recovered.map(Option.some))
  yield* interact.messages.pipe(
    Stream.runForEach((message) => Effect.flatMap(inbox.accept(message), (pending) => Queue.offer(queue, Option.some(pending)))),
    Effect.catchAll((error) => Effect.logError(`the interact bridge stopped: ${error.message}`)),
    // A defect while reading is a bug, not the end of input: read again, after a pause that grows.
    Effect.catchAllDefect((defect) =>
      Effect.logError("reading from the interact bridge failed on an internal error; reading again", defect).pipe(
        Effect.zipRight(Effect.fail(defect))
      )
    ),
    Effect.retry(intakeRestarts),
    Effect.ignore,
    Effect.ensuring(Queue.offer(queue, Option.none())),
    Effect.forkScoped
  )
  while (true) {
    const next = yield* Queue.take(queue)
    if (Option.isNone(next)) return
    const pending = next.value
    yield* agent.handle(pending).pipe(
      Effect.catchAllDefect((defect) =>
        Effect.logError("the agent loop hit an internal error and goes on", defect).pipe(
          Effect.zipRight(interact.send({ channel: pending.channel, text: APOLOGY })),
          Effect.zipRight(inbox.delivered(pending)),
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.interrupt
              : Effect.logError("could not deliver the apology either", cause)
          )
        )
      )
    )
  }
}))
