/**
 * The Discord interact adapter (the Interact port over Discord): messages
 * from chosen Discord channels, threads under them and (if allowed) direct
 * messages in, and slash commands; replies out. discord.js types stay in the
 * modules beside this one.
 *
 * Who does what:
 * - discord.js owns the gateway connection: IDENTIFY, heartbeats, RESUME and
 *   reconnects. Its shards run under a sharding strategy of ours
 *   (ShardingStrategy), through which the adapter paces connection
 *   attempts after a failed one (Pacing: exponential backoff from 5 s
 *   to 60 s with jitter, reset once a connection is healthy), throttles
 *   IDENTIFY, sees close codes (Gateway), and reads MESSAGE_CREATE and
 *   INTERACTION_CREATE straight off the gateway, decoded with Schema
 *   (Inbound). Only the dispatches discord.js needs for its connection state
 *   reach it, so message traffic never grows its caches and a malformed
 *   message cannot throw inside it.
 * - After every new session (a restart, a fresh identify) the messages missed
 *   meanwhile are fetched over REST and answered, bounded by DISCORD_CATCH_UP
 *   (CatchUp); the last message handled per channel is kept beside the memory.
 * - A failed login (Discord unreachable, 5xx) is retried on the same backoff
 *   (Login).
 * - Replies go through a REST client of their own (Replies), so they
 *   are delivered while the gateway reconnects. What each reply answers (a
 *   message, a slash command) travels with it: on the pipes, in the channel
 *   the agent answers on (ReplyTargets).
 * - A rejected token or a refused privileged intent is reported once with
 *   what to do, and never retried (Refusals, DiscordRefused), before start-up
 *   and after.
 */
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Interact, InteractError, type InteractService, type OutboundMessage } from "../../Interact.js"
import type { MissingSetting } from "../../config/MissingSetting.js"
import { MemoryConfig } from "../../memory/MemoryDir.js"
import * as CatchUp from "./CatchUp.js"
import type { DiscordRefused } from "./DiscordRefused.js"
import * as DiscordRest from "./DiscordRest.js"
import { bareToken, DiscordConfig, type DiscordSettings, settingsFrom } from "./Settings.js"
import { connectGateway } from "./Gateway.js"
import { type BotUser, type DiscordMessage, makeInbound } from "./Inbound.js"
import * as Outbox from "./Outbox.js"
import { makeRestPost, makeSend, type Sending, showTyping } from "./Replies.js"
import { addressOf, parseAddress, type ReplyTarget } from "./ReplyTargets.js"
import * as Typing from "./Typing.js"

export { DiscordConfig, type DiscordSettings } from "./Settings.js"
export { reconnectBackoff } from "./Pacing.js"
export type { DiscordMessage } from "./Inbound.js"
export { bareMentionText } from "./Inbound.js"

const announceConnected = (settings: DiscordSettings, user: Option.Option<BotUser>) =>
  Effect.gen(function*() {
    yield* Effect.logInfo(
      `Discord bridge connected${Option.isNone(user) ? "" : ` as ${user.value.username}`}; answering in channel(s) ` +
        settings.channelIds.join(", ") + (settings.directMessages ? " and in direct messages" : "")
    )
    if (settings.directMessages && Option.isNone(settings.allowedUsers)) {
      yield* Effect.logWarning(
        "DISCORD_DMS is on and DISCORD_ALLOWED_USERS is not set: anyone who can message the bot directly is answered"
      )
    }
  })

export interface ConnectOptions {
  /** Where the catch-up state and the outbox of owed replies are kept (the memory directory); none keeps them in memory only. */
  readonly stateDirectory?: string | undefined
}

/** The bridge with who sent each message, for hosts that route by it (DiscordRoutes). */
export interface DiscordBridge {
  /** Accepted messages in arrival order; fails with the refusal once Discord closes the gateway for good. */
  readonly messages: Stream.Stream<DiscordMessage, DiscordRefused>
  /** Sends a reply answering `target` (none: a plain message in the channel). */
  readonly send: Sending["send"]
  /** Journals a reply in the outbox and delivers it in the background (see InteractService.accept). */
  readonly accept: Sending["accept"]
  /** The outbox took a reply keyed `key` already (owed, or delivered): it is not sent again. */
  readonly replyTaken: (key: string) => boolean
}

/**
 * Logs in (retrying with backoff while Discord is unreachable) and returns
 * once the gateway is READY. Fails with DiscordRefused when Discord rejects
 * the token or the intents, or stays unreachable.
 */
export const connect = (
  settings: DiscordSettings,
  options: ConnectOptions = {}
): Effect.Effect<DiscordBridge, DiscordRefused, Scope.Scope> =>
  Effect.gen(function*() {
    const token = bareToken(settings)
    const post = yield* makeRestPost(settings.apiUrl, token)
    const rest = yield* DiscordRest.make(settings.apiUrl, token)
    const typing = yield* Typing.make(showTyping(post))
    const state = yield* CatchUp.makeState(Option.map(Option.fromNullable(options.stateDirectory), CatchUp.stateFileIn))
    // Replies owed are journaled beside the catch-up state until Discord has accepted every part.
    const outbox = options.stateDirectory === undefined ? yield* Outbox.inMemory : yield* Outbox.make(options.stateDirectory)
    const inbound = yield* makeInbound({ settings, typing, rest, state })
    const gatewayClosedForGood = yield* connectGateway(settings.apiUrl, token, settings.directMessages, inbound.onDispatch)
    yield* announceConnected(settings, yield* inbound.botUser)
    return {
      messages: Stream.fromQueue(inbound.messages).pipe(
        Stream.interruptWhen(gatewayClosedForGood)
      ),
      ...yield* makeSend(post, typing, outbox),
      replyTaken: outbox.knows
    }
  })

/** Slash commands kept for their replies at most: an agent that never answers cannot grow this without bound. */
const keptInteractions = 1000

/**
 * As `connect`, as the Interact port: each message's text, on a channel that
 * names its question (ReplyTargets.addressOf), so each reply answers its own.
 */
export const make = (
  settings: DiscordSettings,
  options: ConnectOptions = {}
): Effect.Effect<InteractService, DiscordRefused, Scope.Scope> =>
  Effect.map(connect(settings, options), (bridge) => {
    // A slash command's reply needs its token, which never goes through the pipes.
    const interactions = new Map<string, ReplyTarget>()
    const remember = (target: ReplyTarget) => {
      if (target._tag !== "Interaction") return
      interactions.set(target.interactionId, target)
      if (interactions.size > keptInteractions) interactions.delete(interactions.keys().next().value!)
    }
    /** The reply's channel and question, from the address it came back on. */
    const answering = (reply: OutboundMessage) => {
      const { channel, question } = parseAddress(reply.channel)
      const target: Option.Option<ReplyTarget> = question === undefined
        ? Option.none()
        : question._tag === "Message"
        ? Option.some({ _tag: "Message", messageId: question.id })
        : Option.fromNullable(interactions.get(question.id))
      if (question !== undefined) interactions.delete(question.id)
      // Keyed by its question, as serve's replies are: its nonces are the same whoever sends it, and the
      // outbox takes it once.
      const key = question === undefined ? reply.key : `discord-${question.id}`
      return { message: { ...reply, channel, key }, target }
    }
    return {
      messages: bridge.messages.pipe(
        Stream.map((message) => {
          remember(message.target)
          return { channel: addressOf(message.channel, message.target), text: message.text }
        }),
        // The refusal rides along as the cause: the run reports it as one line, exit 2 (bin.ts).
        Stream.mapError((refused) => new InteractError({ message: refused.message, cause: refused }))
      ),
      send: (reply) => {
        const { message, target } = answering(reply)
        return bridge.send(message, target)
      },
      accept: (reply) => {
        const { message, target } = answering(reply)
        return bridge.accept(message, target)
      }
    }
  })

/** The Discord interact adapter from configuration, its catch-up state in PLANCKCLAW_DIR; see `DiscordConfig` and `make`. */
export const layer: Layer.Layer<Interact, ConfigError.ConfigError | MissingSetting | DiscordRefused> = Layer.scoped(
  Interact,
  Effect.gen(function*() {
    const settings = yield* Effect.flatMap(DiscordConfig, settingsFrom)
    return yield* make(settings, { stateDirectory: yield* MemoryConfig })
  })
)
