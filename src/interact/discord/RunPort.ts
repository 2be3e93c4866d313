/**
 * Discord as `run`'s Interact port: each message goes to the agent on a
 * channel naming its question (ReplyTargets.addressOf), and each reply comes
 * back on it, answering its own question.
 *
 * Beside the agent in one process (`run --bridge discord`), nothing is lost
 * between Discord and the agent's inbox journal: each message is noted owed
 * in `.discord-owed.jsonl` (OwedMessages) before it goes into interact_in,
 * and only then may catch-up pass it; its note goes once its reply is in the
 * outbox. A kill loses what the pipe held, so at the next start each message
 * still owed is handed to the agent again, unless the agent's inbox journal
 * holds it (its channel names it: the agent answers it itself) or the outbox
 * took its reply already. The agent's journal is read before the agent opens
 * it: the bridges are built before the agent (RunProgram).
 *
 * Without the agent beside it (`planckclaw bridge discord`, which cannot see
 * what the agent read), a message counts as held once it goes to the pipe,
 * whose content a kill of both processes loses (see "Write your own bridge").
 */
import * as fs from "node:fs"
import * as Effect from "effect/Effect"
import * as Filter from "effect/Filter"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { type InboundMessage, InteractError, type InteractService, type OutboundMessage } from "../../ports/Interact.js"
import * as Inbox from "../../memory/Inbox.js"
import type { DiscordBridge, DiscordMessage } from "./DiscordBridge.js"
import { keyFor, type OwedReplies } from "./OwedMessages.js"
import { addressOf, parseAddress, type ReplyTarget } from "./ReplyTargets.js"

/** Messages kept for their replies at most: an agent that never answers cannot grow this without bound. */
const keptQuestions = 1000

/** What `run` beside the agent keeps: the bridge's notes, and the agent's inbox journal, read at start. */
export interface BesideAgent {
  readonly owed: OwedReplies
  readonly agentInbox: string
}

/** The keys of the Discord messages the agent's inbox journal holds unanswered (their channels name them). */
export const heldByAgent = (inboxFile: string): ReadonlySet<string> => {
  // Read as it is: a torn last line does not decode, and the agent cuts it off itself.
  const text = Result.getOrElse(Result.try(() => fs.readFileSync(inboxFile, "utf8")), () => "")
  return new Set(Inbox.replay(text).flatMap((pending) => {
    const question = parseAddress(pending.channel).question
    return question === undefined ? [] : [`discord-${question.id}`]
  }))
}

const lineFor = (message: DiscordMessage): InboundMessage => ({ channel: addressOf(message.channel, message.target), text: message.text })

export const make = (bridge: DiscordBridge, beside: Option.Option<BesideAgent>): Effect.Effect<InteractService> =>
  Effect.gen(function*() {
    // Messages handed to the agent whose reply has not come, by key: a slash command's reply needs its token,
    // which never goes through the pipes. `typing`: this process shows typing for it (each message delivered
    // began it), which only its reply ends; a message the last run took (handed again, or held by the agent's
    // journal) shows none.
    const asked = new Map<string, { readonly message: DiscordMessage; typing: boolean }>()
    const remember = (message: DiscordMessage, typing: boolean) => {
      asked.set(keyFor(message), { message, typing })
      if (asked.size > keptQuestions) asked.delete(asked.keys().next().value!)
    }
    const owed = Option.map(beside, (b) => b.owed)

    const again: Array<DiscordMessage> = []
    if (Option.isSome(beside)) {
      const agentHolds = heldByAgent(beside.value.agentInbox)
      const pending = yield* beside.value.owed.pending.pipe(
        Effect.catch((error) => Effect.as(Effect.logError(`Discord messages owed a reply could not be read: ${error.message}`), []))
      )
      for (const message of pending) {
        const key = keyFor(message)
        if (bridge.replyTaken(key)) {
          yield* beside.value.owed.done(message)
          continue
        }
        remember(message, false)
        if (!agentHolds.has(key)) again.push(message)
      }
      if (again.length > 0) {
        yield* Effect.logInfo(`handing the agent again ${again.length} Discord message(s) the last run had not got to it`)
      }
    }

    /** Notes the message owed (beside the agent), then lets catch-up pass it; none for one taken already. */
    const handOn = (message: DiscordMessage): Effect.Effect<Option.Option<InboundMessage>> =>
      Effect.gen(function*() {
        const key = keyFor(message)
        if (Option.isNone(owed)) {
          remember(message, true)
          yield* bridge.held(message)
          return Option.some(lineFor(message))
        }
        // Fetched again by a catch-up that could not pass it: answered already, or with the agent (its reply to come).
        if (bridge.replyTaken(key)) {
          yield* bridge.dropped(message)
          return Option.none()
        }
        const kept = asked.get(key)
        if (kept !== undefined) {
          // Typing shown for it already: this delivery's is ended. Else (the last run's) it shows until its reply.
          if (kept.typing) return yield* Effect.as(bridge.dropped(message), Option.none())
          kept.typing = true
          yield* bridge.held(message)
          return Option.none()
        }
        // A note that cannot be written (a full disk) leaves the message to the agent's own journal.
        yield* owed.value.record(message).pipe(
          Effect.catch((error) => Effect.logError(`Discord message ${key} could not be noted owed: ${error.message}`))
        )
        remember(message, true)
        yield* bridge.held(message)
        return Option.some(lineFor(message))
      })

    /** The reply's channel, question and key, from the address it came back on. */
    const answering = (reply: OutboundMessage) => {
      const { channel, question } = parseAddress(reply.channel)
      const key = question === undefined ? undefined : `discord-${question.id}`
      const kept = key === undefined ? undefined : asked.get(key)
      const message = kept?.message
      const target: Option.Option<ReplyTarget> = message !== undefined
        ? Option.some(message.target)
        : question?._tag === "Message"
        ? Option.some({ _tag: "Message", messageId: question.id })
        : Option.none()
      // Keyed by its question, as serve's replies are: its nonces are the same whoever sends it, and the
      // outbox takes it once. One answering no message this process shows typing for (a scheduled post on a
      // bare channel, the reply to a message the last run took) leaves the channel's typing as it is.
      const unprompted = kept?.typing !== true
      if (kept !== undefined) kept.typing = false
      return { outbound: { ...reply, channel, key: key ?? reply.key, unprompted }, target, message }
    }
    /** Its reply is in the outbox (or was refused): the message is no longer owed. */
    const answered = (message: DiscordMessage | undefined) =>
      message === undefined ? Effect.void : Effect.suspend(() => {
        asked.delete(keyFor(message))
        return Option.isSome(owed) ? owed.value.done(message) : Effect.void
      })

    return {
      messages: Stream.concat(
        Stream.fromIterable(again.map(lineFor)),
        bridge.messages.pipe(Stream.mapEffect(handOn), Stream.filterMap(Filter.fromPredicateOption((line: Option.Option<InboundMessage>) => line)))
      ).pipe(
        // The refusal rides along as the cause: the run reports it as one line, exit 2 (bin.ts).
        Stream.mapError((refused) => new InteractError({ message: refused.message, cause: refused }))
      ),
      send: (reply) => {
        const { message, outbound, target } = answering(reply)
        return bridge.send(outbound, target).pipe(Effect.ensuring(answered(message)))
      },
      accept: (reply) => {
        const { message, outbound, target } = answering(reply)
        return Effect.tap(bridge.accept(outbound, target), () => answered(message))
      }
    }
  })
