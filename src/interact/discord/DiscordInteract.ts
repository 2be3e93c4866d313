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
 *   (CatchUp); where to resume per channel is kept beside the memory, moved
 *   only past messages their taker holds on disk (Checkpoints, `held`). Each
 *   channel's work runs in a lane of its own (Lanes, ChannelCatchUp).
 * - As `run`'s port (RunPort), messages beside the agent are noted owed
 *   (OwedMessages) until their reply is in the outbox.
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
import type * as ConfigError from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Interact, type InteractService } from "../../ports/Interact.js"
import type { MissingSetting } from "../../config/MissingSetting.js"
import * as Layout from "../../memory/Layout.js"
import { MemoryConfig } from "../../memory/MemoryDir.js"
import { AgentReady } from "../AgentReady.js"
import * as CatchUp from "./CatchUp.js"
import type { DiscordRefused } from "./DiscordRefused.js"
import * as DiscordRest from "./DiscordRest.js"
import { bareToken, DiscordConfig, type DiscordSettings, settingsFrom } from "./Settings.js"
import { connectGateway } from "./Gateway.js"
import type { DiscordBridge } from "./DiscordBridge.js"
import { type BotUser, makeInbound } from "./Inbound.js"
import * as Outbox from "./Outbox.js"
import { makeRestPost, makeSend, showTyping } from "./Replies.js"
import * as OwedMessages from "./OwedMessages.js"
import * as RunPort from "./RunPort.js"
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

export type { DiscordBridge } from "./DiscordBridge.js"

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
    const state = yield* CatchUp.makeState(Option.map(Option.fromNullishOr(options.stateDirectory), CatchUp.stateFileIn))
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
      replyTaken: outbox.knows,
      held: inbound.held,
      dropped: (message) => Effect.andThen(inbound.held(message), typing.end(message.channel))
    }
  })

export interface MakeOptions extends ConnectOptions {
  /**
   * `run` beside the agent: its inbox journal, read before the agent opens it. Messages are then noted owed
   * beside the outbox until their reply is in it, and those the agent did not get are handed to it again
   * (RunPort).
   */
  readonly agentInbox?: string | undefined
}

/**
 * As `connect`, as the Interact port: each message's text, on a channel that
 * names its question (ReplyTargets.addressOf), so each reply answers its own.
 */
export const make = (
  settings: DiscordSettings,
  options: MakeOptions = {}
): Effect.Effect<InteractService, DiscordRefused, Scope.Scope> =>
  Effect.gen(function*() {
    const { agentInbox, stateDirectory } = options
    const owed = agentInbox === undefined || stateDirectory === undefined
      ? Option.none()
      : yield* OwedMessages.make(stateDirectory).pipe(
        Effect.map(Option.some),
        Effect.catch((error) =>
          Effect.as(Effect.logError(`${error.message}; Discord messages are not noted owed in this run`), Option.none())
        )
      )
    const bridge = yield* connect(settings, options)
    return yield* RunPort.make(bridge, Option.map(owed, (notes) => ({ owed: notes, agentInbox: agentInbox! })))
  })

/**
 * The Discord interact adapter from configuration, its catch-up state in PLANCKCLAW_DIR; see `DiscordConfig` and
 * `make`. In a run (AgentReady is there) the agent is in this process, its inbox journal beside.
 */
export const layer: Layer.Layer<Interact, ConfigError.ConfigError | MissingSetting | DiscordRefused> = Layer.effect(
  Interact,
  Effect.gen(function*() {
    const settings = yield* Effect.flatMap(DiscordConfig, settingsFrom)
    const memory = yield* MemoryConfig
    const besideAgent = Option.isSome(yield* Effect.serviceOption(AgentReady))
    return yield* make(settings, { stateDirectory: memory, ...(besideAgent ? { agentInbox: Layout.files(memory).inbox } : {}) })
  })
)
