/**
 * The Discord interact adapter (the Interact port over Discord): messages
 * from chosen Discord channels (and, if allowed, direct messages) in,
 * replies out. discord.js types stay in the modules beside this one.
 *
 * Who does what:
 * - discord.js owns the gateway connection: IDENTIFY, heartbeats, RESUME and
 *   reconnects. Its shards run under a sharding strategy of ours
 *   (ShardingStrategy), through which the adapter paces connection
 *   attempts after a failed one (Pacing: exponential backoff from 5 s
 *   to 60 s with jitter, reset once a connection is healthy), throttles
 *   IDENTIFY, sees close codes (Gateway), and reads MESSAGE_CREATE
 *   straight off the gateway, decoded with Schema (Inbound). Only the
 *   dispatches discord.js needs for its connection state reach it, so message
 *   traffic never grows its caches and a malformed message cannot throw
 *   inside it.
 * - A failed login (Discord unreachable, 5xx) is retried on the same backoff
 *   (Login).
 * - Replies go through a REST client of their own (Replies), so they
 *   are delivered while the gateway reconnects.
 * - A rejected token or a refused privileged intent is reported once with
 *   what to do, and never retried (Refusals, DiscordRefused).
 */
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Interact, type InteractService } from "../../Interact.js"
import type { MissingSetting } from "../../config/MissingSetting.js"
import { MemoryConfig } from "../../memory/MemoryDir.js"
import type { DiscordRefused } from "./DiscordRefused.js"
import { bareToken, DiscordConfig, type DiscordSettings, settingsFrom } from "./Settings.js"
import { connectGateway } from "./Gateway.js"
import { type BotUser, makeInbound } from "./Inbound.js"
import * as Outbox from "./Outbox.js"
import { makeRestPost, makeSend, showTyping } from "./Replies.js"
import * as ReplyTargets from "./ReplyTargets.js"
import * as Typing from "./Typing.js"

export { DiscordConfig, type DiscordSettings } from "./Settings.js"
export { reconnectBackoff } from "./Pacing.js"

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

/**
 * Logs in (retrying with backoff while Discord is unreachable) and returns
 * once the gateway is READY. Fails with DiscordRefused when Discord rejects
 * the token or the intents, or stays unreachable.
 */
export const make = (
  settings: DiscordSettings,
  options: { readonly outboxDirectory?: string } = {}
): Effect.Effect<InteractService, DiscordRefused, Scope.Scope> =>
  Effect.gen(function*() {
    const token = bareToken(settings)
    const post = yield* makeRestPost(settings.apiUrl, token)
    const typing = yield* Typing.make(showTyping(post))
    const targets = yield* ReplyTargets.make
    const outbox = options.outboxDirectory === undefined ? yield* Outbox.inMemory : yield* Outbox.make(options.outboxDirectory)
    const inbound = yield* makeInbound(settings, typing)
    const gatewayClosedForGood = yield* connectGateway(settings.apiUrl, token, inbound.onDispatch)
    yield* announceConnected(settings, yield* inbound.botUser)
    return {
      messages: Stream.fromQueue(inbound.messages).pipe(Stream.interruptWhen(gatewayClosedForGood)),
      ...yield* makeSend(post, typing, targets, outbox)
    }
  })

/** The Discord interact adapter from configuration; see `DiscordConfig` and `make`. */
export const layer: Layer.Layer<Interact, ConfigError.ConfigError | MissingSetting | DiscordRefused> = Layer.scoped(
  Interact,
  // Replies owed are journaled beside the memory (PLANCKCLAW_DIR).
  Effect.all([DiscordConfig.pipe(Effect.flatMap(settingsFrom)), MemoryConfig]).pipe(
    Effect.flatMap(([settings, directory]) => make(settings, { outboxDirectory: directory }))
  )
)
