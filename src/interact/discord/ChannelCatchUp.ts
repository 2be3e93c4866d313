/**
 * What runs in a channel's lane (see Inbound): its messages, each after a
 * lookup of what the channel is when it is new; and, at every new session,
 * the messages it got while the bridge was away (CatchUp). A message whose
 * channel Discord could not describe leaves a gap, fetched with the
 * channel's next message.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as ChannelKinds from "./ChannelKinds.js"
import { type CatchUpState, missedMessages } from "./CatchUp.js"
import type { DiscordRest } from "./DiscordRest.js"
import { decodeMessage, type GatewayMessage } from "./GatewayMessage.js"
import { describeRestError } from "./Refusals.js"
import { type CatchUpBounds, defaultCatchUp, type DiscordSettings } from "./Settings.js"
import * as SlashCommands from "./SlashCommands.js"

export interface ChannelCatchUpOptions {
  readonly settings: DiscordSettings
  readonly rest: DiscordRest
  readonly state: CatchUpState
  readonly kinds: ChannelKinds.ChannelKinds
  /** Filters and queues a message of a channel of `kind`; true when it was queued for the agent. */
  readonly accept: (message: GatewayMessage, kind: ChannelKinds.ChannelKind) => Effect.Effect<boolean>
}

export interface ChannelCatchUp {
  /** A message from the gateway; run in its channel's lane. */
  readonly onMessage: (message: GatewayMessage) => Effect.Effect<void>
  /** What a new session asks of each channel (its lane's next work): checks at the first, then catch-up. */
  readonly sessionWork: (
    first: boolean,
    applicationId: string | undefined
  ) => Effect.Effect<ReadonlyArray<readonly [string, Effect.Effect<void>]>>
}

const before = (id: string): string | undefined => /^\d{1,20}$/.test(id) ? String(BigInt(id) - 1n) : undefined

export const make = (options: ChannelCatchUpOptions): ChannelCatchUp => {
  const { accept, kinds, rest, settings, state } = options
  const catchUpBounds = settings.catchUp ?? defaultCatchUp
  // A gap is caught up even with DISCORD_CATCH_UP off: its messages arrived while the bridge listened.
  const gapBounds: CatchUpBounds = catchUpBounds.messages === 0 ? defaultCatchUp : catchUpBounds
  // Channels whose lookup failed, each with the id just before its first message not handled.
  const unchecked = new Map<string, string>()
  const commandGuilds = new Set<string>()

  /** Answers what `channelId` got after `after`, in order, once, and says how much it found. */
  const catchUpChannel = (channelId: string, after: string, kind: ChannelKinds.ChannelKind, bounds: CatchUpBounds) =>
    Effect.gen(function*() {
      const missed = yield* missedMessages(rest, channelId, after, bounds).pipe(Effect.either)
      if (Either.isLeft(missed)) {
        return yield* Effect.logWarning(`Discord messages missed in channel ${channelId} could not be fetched: ${missed.left}`)
      }
      unchecked.delete(channelId)
      const { dropped, messages: found, more } = missed.right
      let answered = 0
      for (const raw of found) {
        const decoded = decodeMessage(raw)
        if (Either.isRight(decoded) && (yield* accept(decoded.right, kind))) answered++
      }
      if (found.length > 0 || dropped > 0 || more) {
        yield* Effect.logInfo(
          `Discord channel ${channelId}: ${found.length} message(s) sent while the bridge was away, ` +
            `${answered} to answer` +
            (dropped > 0 || more ? `; ${dropped}${more ? " or more" : ""} older one(s) beyond DISCORD_CATCH_UP skipped` : "")
        )
      }
    })

  /**
   * A message whose channel Discord could not describe: it is fetched with the channel's next message
   * that can be checked, or by the next session's catch-up (the state notes the channel from here on).
   */
  const leaveForLater = (message: GatewayMessage, failed: ChannelKinds.ChannelLookupFailed) =>
    Effect.gen(function*() {
      const gap = before(message.id)
      if (gap !== undefined && !unchecked.has(message.channel_id)) unchecked.set(message.channel_id, gap)
      if (gap !== undefined && Option.isNone(yield* state.last(message.channel_id))) {
        yield* state.record(message.channel_id, gap)
      }
      yield* Effect.logWarning(
        `Discord channel ${failed.channelId} could not be looked up (${failed.message}); ` +
          `message ${message.id} there is answered once it can be`
      )
    })

  const onMessage = (message: GatewayMessage) =>
    kinds.of({ channelId: message.channel_id, guildId: message.guild_id, channelType: message.channel_type }).pipe(
      Effect.matchEffect({
        onFailure: (failed) => leaveForLater(message, failed),
        onSuccess: (kind) =>
          Effect.gen(function*() {
            if (kind === undefined) return void unchecked.delete(message.channel_id)
            // What waited for this channel's lookup comes first; this message is among it, taken once.
            const gap = unchecked.get(message.channel_id)
            if (gap !== undefined) yield* catchUpChannel(message.channel_id, gap, kind, gapBounds)
            yield* accept(message, kind)
          })
      })
    )

  /**
   * At the first READY, a configured channel is looked up: a warning if the bot cannot see it, the commands
   * registered in its server. Where nothing was handled yet, catch-up starts from the channel's latest message
   * (an empty channel: from its start), so what is sent during the next outage is not lost; nothing can have
   * been missed there yet. True when the channel was seeded so.
   */
  const checkChannel = (channelId: string, applicationId: string | undefined) =>
    kinds.lookup(channelId).pipe(
      Effect.flatMap((info) =>
        Effect.gen(function*() {
          const seeded = Option.isNone(yield* state.last(channelId))
          if (seeded) yield* state.record(channelId, info.last_message_id ?? "0")
          if (info.guild_id !== undefined && applicationId !== undefined && !commandGuilds.has(info.guild_id)) {
            commandGuilds.add(info.guild_id)
            yield* SlashCommands.registerCommands(rest, applicationId, info.guild_id)
          }
          return seeded
        })
      ),
      Effect.catchAll((cause) =>
        Effect.as(
          Effect.logWarning(
            `DISCORD_CHANNEL_ID: the bot cannot see channel ${channelId} (${describeRestError(cause)}); ` +
              "invite it to that server and give it View Channel, Read Message History and Send Messages there"
          ),
          false
        )
      )
    )

  /** Answers what the channel got after `after` while the bridge was away, in order, once. */
  const catchUpFrom = (channelId: string, after: string) =>
    Effect.gen(function*() {
      const kind = yield* kinds.ofId(channelId).pipe(
        Effect.catchTag("ChannelLookupFailed", (failed) =>
          Effect.as(
            Effect.logWarning(`Discord channel ${channelId} could not be looked up (${failed.message}); caught up next time`),
            undefined
          ))
      )
      if (kind !== undefined) yield* catchUpChannel(channelId, after, kind, catchUpBounds)
    })

  const sessionWork: ChannelCatchUp["sessionWork"] = (first, applicationId) =>
    Effect.map(state.all, (handled) => {
      const catchingUp = catchUpBounds.messages > 0
      const work = new Map<string, Effect.Effect<void>>()
      if (first) {
        for (const channelId of settings.channelIds) {
          const after = handled.get(channelId)
          work.set(
            channelId,
            Effect.flatMap(checkChannel(channelId, applicationId), (seeded) =>
              seeded || !catchingUp || after === undefined ? Effect.void : catchUpFrom(channelId, after))
          )
        }
      }
      if (catchingUp) {
        for (const [channelId, after] of handled) if (!work.has(channelId)) work.set(channelId, catchUpFrom(channelId, after))
      }
      return [...work]
    })

  return { onMessage, sessionWork }
}
