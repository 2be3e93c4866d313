/**
 * Discord in `planckclaw serve --bridge discord`: each message goes to an
 * agent of the host, chosen by DISCORD_AGENT_PER (`channel`: one agent per
 * channel or thread, `discord-c<channel id>`; `user`: `discord-u<user id>`;
 * `server`: `discord-g<server id>`; `one`: `discord`). Direct messages always
 * go to the sender's own agent. The agent reads who is speaking: the
 * author's display name before the text ("Alice: hello"); commands
 * ("/compact", "/usage", "/forget") pass as they are. Each reply goes back
 * through the bridge's send, answering the question it belongs to.
 *
 * With OwedReplies (`serve`: a file, DiscordOwedFile; `serve --cluster`:
 * PostgreSQL, where the host sends to the agent's entity wherever it lives),
 * each message goes under its Discord id as Idempotency-Key (handed over
 * twice, it is turned once) and is noted owed until its reply is in the
 * outbox, so the next start, or a runner that takes the gateway over, posts
 * the replies left. The bridge's catch-up state passes a message only once
 * it is noted (without notes: once its agent journaled it).
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/Config"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as SlashCommands from "../../agent/SlashCommands.js"
import { choiceOf } from "../../config/ConfigRange.js"
import type { MissingSetting } from "../../config/MissingSetting.js"
import * as DiscordSetting from "../../config/settings/Discord.js"
import * as Discord from "../../interact/discord/DiscordInteract.js"
import type { DiscordRefused } from "../../interact/discord/DiscordRefused.js"
import { keyFor, type OwedReplies } from "../../interact/discord/OwedMessages.js"
import { settingsFrom } from "../../interact/discord/Settings.js"
import { AgentHost, awaitReply } from "./AgentHost.js"
import { HostError } from "./HostError.js"

export type AgentPer = (typeof DiscordSetting.AgentPer.choices)[number]

/** DISCORD_AGENT_PER: which agent answers a Discord message (default `channel`). */
export const AgentPerConfig: Config.Config<AgentPer> = choiceOf(DiscordSetting.AgentPer)

/** The agent a message goes to. */
export const agentFor = (per: AgentPer, message: Discord.DiscordMessage): string => {
  if (message.kind === "direct") return `discord-u${message.authorId}`
  switch (per) {
    case "channel":
      return `discord-c${message.channel}`
    case "user":
      return `discord-u${message.authorId}`
    case "server":
      return message.guildId === undefined ? `discord-u${message.authorId}` : `discord-g${message.guildId}`
    case "one":
      return "discord"
  }
}

/**
 * What the agent reads: who speaks, then what they said; a command stays a command. Only what the agent
 * takes as one: "/etc/hosts is empty" is a message, and the agent must know who wrote it.
 */
export const textFor = (message: Discord.DiscordMessage): string =>
  Option.isSome(SlashCommands.parse(message.text))
    ? message.text
    : `${message.authorName.replace(/[\r\n]+/g, " ")}: ${message.text}`

// The Idempotency-Key of a Discord message or slash command (its Discord id), and where messages owed a reply
// are noted (a file, the cluster's database): the bridge's, which keeps the same for `run`.
export { keyFor, type OwedReplies } from "../../interact/discord/OwedMessages.js"

export interface RunOptions {
  readonly per?: AgentPer
  /** Where the catch-up state and the outbox are kept; default the host's directory. */
  readonly stateDirectory?: string
  /**
   * The cluster's: each message goes under its Discord id as Idempotency-Key
   * (keyFor) and is noted owed until its reply is journaled in the outbox.
   */
  readonly owed?: OwedReplies
}

/**
 * Serves Discord into the agent host until Discord closes the gateway for
 * good (then fails with the refusal) or the scope ends. Messages are handed
 * to their agents in arrival order (each journaled before the next is
 * taken), and the next is taken while earlier ones are being answered;
 * replies go out as they come, one agent's in the order of its messages.
 */
export const run = (options: RunOptions = {}): Effect.Effect<
  never,
  DiscordRefused | ConfigError.ConfigError | MissingSetting,
  AgentHost
> =>
  Effect.scoped(Effect.gen(function*() {
    const host = yield* AgentHost
    const per = options.per ?? (yield* AgentPerConfig)
    const settings = yield* Effect.flatMap(Discord.DiscordConfig, settingsFrom)
    const bridge = yield* Discord.connect(settings, { stateDirectory: options.stateDirectory ?? host.directory })
    yield* Effect.logInfo(`Discord messages go to one agent per ${per} (DISCORD_AGENT_PER)`)
    const { owed } = options
    // Keyed by the Discord message it answers: a reply sent twice (handed over again after a takeover) posts once.
    const outbound = (message: Discord.DiscordMessage, text: string) => ({ channel: message.channel, text, key: keyFor(message) })
    // With owed replies, a reply is done with once the outbox holds it; else once delivered.
    const reply = (message: Discord.DiscordMessage, text: string) => {
      const target = Option.some(message.target)
      return (owed === undefined
        ? bridge.send(outbound(message, text), target)
        : Effect.asVoid(bridge.accept(outbound(message, text), target))).pipe(
          Effect.ignore,
          Effect.andThen(owed === undefined ? Effect.void : owed.done(message))
        )
    }

    // Each agent's last message not yet answered: a reply goes out after the one before it
    // (a host may complete them out of order, as the cluster's replies come from storage).
    const lastOfAgent = new Map<string, Deferred.Deferred<void>>()

    /** Hands `message` to its agent; a message found owed is handed over again under the same key. */
    const route = (message: Discord.DiscordMessage, noted = false) =>
      Effect.gen(function*() {
        const agent = agentFor(per, message)
        const accepted = yield* Deferred.make<void>()
        const answered = yield* Deferred.make<void>()
        const before = lastOfAgent.get(agent)
        lastOfAgent.set(agent, answered)
        const inTurn = (effect: Effect.Effect<void>) =>
          Effect.andThen(before === undefined ? Effect.void : Deferred.await(before), effect)
        yield* Effect.scoped(Effect.gen(function*() {
          const waiting = yield* (owed === undefined || noted ? Effect.void : owed.record(message)).pipe(
            Effect.mapError((error) => new HostError({ reason: "unavailable", message: error.message })),
            // Noted owed: on disk, so catch-up may pass it.
            Effect.tap(() => owed === undefined ? Effect.void : bridge.held(message)),
            Effect.andThen(host.accept(agent, {
              text: textFor(message),
              channel: message.channel,
              ...(owed === undefined ? {} : { idempotencyKey: keyFor(message) })
            })),
            Effect.result,
            // Without owed notes, the agent's journal holds it; a refused one is answered with why.
            Effect.tap(() => bridge.held(message)),
            Effect.ensuring(Deferred.succeed(accepted, undefined))
          )
          if (Result.isFailure(waiting)) {
            yield* Effect.logWarning(`Discord message for agent ${agent} refused: ${waiting.failure.message}`)
            return yield* inTurn(reply(message, `Sorry, I could not take that message: ${waiting.failure.message}`))
          }
          const answer = yield* awaitReply(waiting.success)
          yield* inTurn(reply(message, answer.reply))
        })).pipe(
          Effect.ensuring(Effect.sync(() => lastOfAgent.get(agent) === answered && lastOfAgent.delete(agent))),
          Effect.ensuring(Deferred.succeed(answered, undefined)),
          Effect.annotateLogs("agent", agent),
          Effect.forkScoped
        )
        // The next message is taken once this one is journaled: an agent's messages keep their order.
        yield* Deferred.await(accepted)
      })

    if (owed !== undefined) {
      const left = yield* owed.pending.pipe(
        Effect.catch((error) => Effect.as(Effect.logError(`Discord messages owed a reply could not be read: ${error.message}`), []))
      )
      // A reply the outbox took already (the crash came before its note here) is not asked for nor posted again.
      const answered = left.filter((message) => bridge.replyTaken(keyFor(message)))
      const unanswered = left.filter((message) => !bridge.replyTaken(keyFor(message)))
      yield* Effect.forEach(answered, owed.done, { discard: true })
      if (unanswered.length > 0) {
        yield* Effect.logInfo(`answering ${unanswered.length} Discord message(s) the previous holder of the gateway had not`)
      }
      yield* Effect.forEach(unanswered, (message) => route(message, true), { discard: true })
    }
    return yield* bridge.messages.pipe(
      Stream.runForEach((message) => route(message)),
      Effect.andThen(Effect.never)
    )
  }))
