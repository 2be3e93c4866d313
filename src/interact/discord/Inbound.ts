/**
 * Messages in: gateway dispatches decoded with Schema (a malformed one is
 * ignored, never thrown), filtered down to the messages the adapter answers,
 * and queued once each.
 */
import type { GatewayDispatchPayload } from "discord.js"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { InboundMessage } from "../../Interact.js"
import type { DiscordSettings } from "./Settings.js"
import type { TypingIndicator } from "./Typing.js"

const GatewayMessage = Schema.Struct({
  id: Schema.String,
  channel_id: Schema.String,
  guild_id: Schema.optionalWith(Schema.String, { nullable: true }),
  channel_type: Schema.optionalWith(Schema.Number, { nullable: true }),
  webhook_id: Schema.optionalWith(Schema.String, { nullable: true }),
  type: Schema.optionalWith(Schema.Number, { nullable: true }),
  content: Schema.optionalWith(Schema.String, { nullable: true, default: () => "" }),
  author: Schema.Struct({
    id: Schema.String,
    bot: Schema.optionalWith(Schema.Boolean, { nullable: true, default: () => false })
  })
})
type GatewayMessage = typeof GatewayMessage.Type

const GatewayReady = Schema.Struct({ user: Schema.Struct({ id: Schema.String, username: Schema.String }) })

/** The bot's own account, as READY names it. */
export type BotUser = typeof GatewayReady.Type["user"]

const decodeMessage = Schema.decodeUnknownEither(GatewayMessage)
const decodeReady = Schema.decodeUnknownEither(GatewayReady)

/** Ordinary messages and replies; joins, pins and other system messages are not talk. */
const conversationalTypes = new Set([0, 19])
const directMessageChannelType = 1

/** Ids of recently accepted messages: a replayed or repeated MESSAGE_CREATE is answered once. */
const rememberedMessages = 1000

const withoutMention = (content: string, botUserId: string | undefined): string =>
  botUserId === undefined ? content : content.replace(new RegExp(` ?<@!?${botUserId}> ?`, "g"), " ")

/** The message for the agent, or undefined when this one is not for us. */
const admit = (
  settings: DiscordSettings,
  botUserId: string | undefined,
  message: GatewayMessage
): InboundMessage | undefined => {
  if (message.author.bot || message.author.id === botUserId || message.webhook_id !== undefined) return undefined
  if (message.type !== undefined && !conversationalTypes.has(message.type)) return undefined
  const inChannel = settings.channelIds.includes(message.channel_id)
  const direct = !inChannel && message.guild_id === undefined &&
    (message.channel_type === undefined || message.channel_type === directMessageChannelType)
  if (!inChannel && !(direct && settings.directMessages)) return undefined
  if (Option.isSome(settings.allowedUsers) && !settings.allowedUsers.value.includes(message.author.id)) return undefined
  const text = withoutMention(message.content, botUserId).trim()
  return text === "" ? undefined : { channel: message.channel_id, text }
}

export interface Inbound {
  /** Accepted messages, in arrival order; shut down with the scope. */
  readonly messages: Queue.Dequeue<InboundMessage>
  /** Known once READY has arrived. */
  readonly botUser: Effect.Effect<Option.Option<BotUser>>
  /** Takes every gateway dispatch: READY names the bot, MESSAGE_CREATE may bring a message. */
  readonly onDispatch: (payload: GatewayDispatchPayload) => Effect.Effect<void>
}

/** Accepted messages show the typing indicator at once, until their reply is out. */
export const makeInbound = (
  settings: DiscordSettings,
  typing: TypingIndicator
): Effect.Effect<Inbound, never, Scope.Scope> =>
  Effect.gen(function*() {
    const messages = yield* Effect.acquireRelease(Queue.unbounded<InboundMessage>(), Queue.shutdown)
    const botUser = yield* Ref.make(Option.none<BotUser>())
    const recentIds = yield* Ref.make<ReadonlyArray<string>>([])

    const accept = (message: GatewayMessage) =>
      Effect.gen(function*() {
        const bot = yield* Ref.get(botUser)
        const admitted = admit(settings, Option.getOrUndefined(bot)?.id, message)
        if (admitted === undefined) return
        const fresh = yield* Ref.modify(recentIds, (ids) =>
          ids.includes(message.id)
            ? [false, ids]
            : [true, [...ids.slice(1 - rememberedMessages), message.id]])
        if (!fresh) return
        yield* typing.begin(admitted.channel)
        yield* Queue.offer(messages, admitted)
      })

    const onDispatch = (payload: GatewayDispatchPayload): Effect.Effect<void> => {
      switch (payload.t) {
        case "READY":
          return Either.match(decodeReady(payload.d), {
            onLeft: () => Effect.logWarning("Discord READY without a user: the bot's own mentions stay in the text"),
            onRight: (ready) => Ref.set(botUser, Option.some(ready.user))
          })
        case "MESSAGE_CREATE":
          return Either.match(decodeMessage(payload.d), {
            onLeft: () => Effect.logDebug("Ignored a MESSAGE_CREATE that does not decode"),
            onRight: accept
          })
        default:
          return Effect.void
      }
    }

    return { messages, botUser: Ref.get(botUser), onDispatch }
  })
