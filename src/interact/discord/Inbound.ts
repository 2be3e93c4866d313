/**
 * Messages in: gateway dispatches decoded with Schema (a malformed one is
 * ignored, never thrown), filtered down to the messages the adapter answers,
 * and queued once each, in order. Dispatches are handled one at a time by a
 * fiber of their own, so the REST calls some need (a thread's parent, a text
 * attachment, the messages missed while away) never reorder them.
 */
import type { GatewayDispatchPayload } from "discord.js"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { Attachment, withAttachments } from "./Attachments.js"
import * as ChannelKinds from "./ChannelKinds.js"
import { type CatchUpState, missedMessages } from "./CatchUp.js"
import type { DiscordRest } from "./DiscordRest.js"
import { describeRestError } from "./Refusals.js"
import type { ReplyTarget } from "./ReplyTargets.js"
import { defaultAttachmentBytes, defaultCatchUp, type DiscordSettings } from "./Settings.js"
import * as SlashCommands from "./SlashCommands.js"
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
    username: Schema.optionalWith(Schema.String, { nullable: true, default: () => "" }),
    global_name: Schema.optionalWith(Schema.String, { nullable: true }),
    bot: Schema.optionalWith(Schema.Boolean, { nullable: true, default: () => false })
  }),
  member: Schema.optionalWith(Schema.Struct({ nick: Schema.optionalWith(Schema.String, { nullable: true }) }), {
    nullable: true
  }),
  attachments: Schema.optionalWith(Schema.Array(Attachment), { nullable: true, default: () => [] })
})
type GatewayMessage = typeof GatewayMessage.Type

const GatewayReady = Schema.Struct({
  user: Schema.Struct({ id: Schema.String, username: Schema.String }),
  application: Schema.optionalWith(Schema.Struct({ id: Schema.String }), { nullable: true })
})

/** The bot's own account, as READY names it. */
export type BotUser = typeof GatewayReady.Type["user"]

const decodeMessage = Schema.decodeUnknownEither(GatewayMessage)
const decodeReady = Schema.decodeUnknownEither(GatewayReady)

/** A message for the agent, with who sent it, where, and what its reply answers. */
export interface DiscordMessage {
  readonly channel: string
  readonly kind: ChannelKinds.ChannelKind
  readonly guildId: string | undefined
  readonly authorId: string
  /** Server nickname, else display name, else user name. */
  readonly authorName: string
  readonly text: string
  readonly target: ReplyTarget
}

/** What the agent reads for a message that only mentions the bot: it was called, and answers. */
export const bareMentionText = "(mentioned you without a message)"

/** Ordinary messages and replies; joins, pins and other system messages are not talk. */
const conversationalTypes = new Set([0, 19])

/** Ids of recently accepted messages: a replayed or repeated MESSAGE_CREATE is answered once. */
const rememberedMessages = 1000

const mentionOf = (botUserId: string) => new RegExp(` ?<@!?${botUserId}> ?`, "g")

const withoutMention = (content: string, botUserId: string | undefined): string =>
  botUserId === undefined ? content : content.replace(mentionOf(botUserId), " ")

const allowed = (settings: DiscordSettings, userId: string) =>
  Option.isNone(settings.allowedUsers) || settings.allowedUsers.value.includes(userId)

export interface Inbound {
  /** Accepted messages, in arrival order; shut down with the scope. */
  readonly messages: Queue.Dequeue<DiscordMessage>
  /** Known once READY has arrived. */
  readonly botUser: Effect.Effect<Option.Option<BotUser>>
  /** Takes every gateway dispatch, in order; handled in the background, in that order. */
  readonly onDispatch: (payload: GatewayDispatchPayload) => Effect.Effect<void>
}

export interface InboundOptions {
  readonly settings: DiscordSettings
  readonly typing: TypingIndicator
  readonly rest: DiscordRest
  readonly state: CatchUpState
}

/** Accepted messages show the typing indicator at once, until their reply is out. */
export const makeInbound = (options: InboundOptions): Effect.Effect<Inbound, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { rest, settings, state, typing } = options
    const attachmentBytes = settings.attachmentBytes ?? defaultAttachmentBytes
    const catchUpBounds = settings.catchUp ?? defaultCatchUp
    const messages = yield* Effect.acquireRelease(Queue.unbounded<DiscordMessage>(), Queue.shutdown)
    const dispatches = yield* Effect.acquireRelease(Queue.unbounded<GatewayDispatchPayload>(), Queue.shutdown)
    const botUser = yield* Ref.make(Option.none<BotUser>())
    const recentIds = yield* Ref.make<ReadonlyArray<string>>([])
    const kinds = ChannelKinds.make(settings, rest)
    const commandGuilds = new Set<string>()
    const seededNow = new Set<string>()
    let readies = 0

    const fresh = (id: string) =>
      Ref.modify(recentIds, (ids) =>
        ids.includes(id) ? [false, ids] : [true, [...ids.slice(1 - rememberedMessages), id]])

    const deliver = (message: DiscordMessage) =>
      Effect.zipRight(typing.begin(message.channel), Queue.offer(messages, message))

    /** Filters, reads attachments, queues; remembers the message as handled in its channel either way. */
    const accept = (message: GatewayMessage, kind: ChannelKinds.ChannelKind) =>
      Effect.gen(function*() {
        // Repeats are caught by id (a RESUME replay, a message both caught up and dispatched); a new
        // session never replays what an earlier process handled, and catch-up fetches only what is newer.
        const bot = Option.getOrUndefined(yield* Ref.get(botUser))
        const text = withoutMention(message.content, bot?.id).trim()
        const mentioned = bot !== undefined && message.content.trim() !== "" && mentionOf(bot.id).test(message.content)
        const talk = !message.author.bot && message.author.id !== bot?.id && message.webhook_id === undefined &&
          (message.type === undefined || conversationalTypes.has(message.type)) && allowed(settings, message.author.id) &&
          (text !== "" || mentioned || message.attachments.length > 0)
        if (talk && (yield* fresh(message.id))) {
          yield* deliver({
            channel: message.channel_id,
            kind,
            guildId: message.guild_id,
            authorId: message.author.id,
            authorName: message.member?.nick ?? message.author.global_name ?? message.author.username,
            text: yield* withAttachments(text === "" && mentioned ? bareMentionText : text, message.attachments, attachmentBytes),
            target: { _tag: "Message", messageId: message.id }
          })
        }
        yield* state.record(message.channel_id, message.id)
      })

    const onMessage = (message: GatewayMessage) =>
      Effect.flatMap(
        kinds.of({ channelId: message.channel_id, guildId: message.guild_id, channelType: message.channel_type }),
        (kind) => kind === undefined ? Effect.void : accept(message, kind)
      )

    const onInteraction = (raw: unknown) =>
      Effect.gen(function*() {
        const decoded = SlashCommands.decodeInteraction(raw)
        if (Either.isLeft(decoded)) return yield* Effect.logDebug("Ignored an INTERACTION_CREATE that does not decode")
        const interaction = decoded.right
        const text = SlashCommands.commandText(interaction)
        const asker = SlashCommands.askedBy(interaction)
        const channelId = interaction.channel_id ?? interaction.channel?.id
        if (text === undefined || asker === undefined || channelId === undefined) return
        const kind = yield* kinds.of({ channelId, guildId: interaction.guild_id, channelType: interaction.channel?.type })
        if (kind === undefined || !allowed(settings, asker.id)) {
          return yield* SlashCommands.refuseEphemerally(
            rest,
            interaction,
            kind === undefined ? "I do not answer in this channel." : "Sorry, I only answer the people I was set up for."
          )
        }
        if (!(yield* fresh(interaction.id))) return
        const acknowledged = yield* SlashCommands.deferReply(rest, interaction).pipe(Effect.either)
        if (Either.isLeft(acknowledged)) {
          return yield* Effect.logWarning(`Discord /${interaction.data?.name} not acknowledged (${acknowledged.left}); not answered`)
        }
        yield* deliver({
          channel: channelId,
          kind,
          guildId: interaction.guild_id,
          authorId: asker.id,
          authorName: asker.name,
          text,
          target: {
            _tag: "Interaction",
            applicationId: interaction.application_id,
            interactionId: interaction.id,
            token: interaction.token
          }
        })
      })

    /** At the first READY: a warning for each configured channel the bot cannot see; commands for their servers. */
    const checkChannels = (applicationId: string | undefined) =>
      Effect.forEach(settings.channelIds, (channelId) =>
        kinds.lookup(channelId).pipe(
          Effect.tap((info) =>
            Effect.gen(function*() {
              // Where nothing was handled yet, catch-up starts from the channel's latest message (an empty
              // channel: from its start), so what is sent during the next outage is not lost.
              // Nothing can have been missed there yet: the catch-up of this READY leaves it alone.
              if (Option.isNone(yield* state.last(channelId))) {
                yield* state.record(channelId, info.last_message_id ?? "0")
                seededNow.add(channelId)
              }
              if (info.guild_id !== undefined && applicationId !== undefined && !commandGuilds.has(info.guild_id)) {
                commandGuilds.add(info.guild_id)
                yield* SlashCommands.registerCommands(rest, applicationId, info.guild_id)
              }
            })
          ),
          Effect.catchAll((cause) =>
            Effect.logWarning(
              `DISCORD_CHANNEL_ID: the bot cannot see channel ${channelId} (${describeRestError(cause)}); ` +
                "invite it to that server and give it View Channel, Read Message History and Send Messages there"
            )
          )
        ), { discard: true })

    /** Answers what the channels got while the bridge was away, in order, once. */
    const catchUp = Effect.gen(function*() {
      if (catchUpBounds.messages === 0) return
      for (const [channelId, after] of yield* state.all) {
        if (seededNow.delete(channelId)) continue
        const kind = yield* kinds.ofId(channelId)
        if (kind === undefined) continue
        const missed = yield* missedMessages(rest, channelId, after, catchUpBounds).pipe(Effect.either)
        if (Either.isLeft(missed)) {
          yield* Effect.logWarning(`Discord messages missed in channel ${channelId} could not be fetched: ${missed.left}`)
          continue
        }
        const { dropped, messages: found } = missed.right
        const before = yield* Queue.size(messages)
        for (const raw of found) {
          const decoded = decodeMessage(raw)
          if (Either.isRight(decoded)) yield* accept(decoded.right, kind)
        }
        const answered = (yield* Queue.size(messages)) - before
        if (found.length > 0 || dropped > 0) {
          yield* Effect.logInfo(
            `Discord channel ${channelId}: ${found.length} message(s) sent while the bridge was away, ` +
              `${answered} to answer` + (dropped > 0 ? `; ${dropped} older one(s) beyond DISCORD_CATCH_UP skipped` : "")
          )
        }
      }
    })

    const onReady = (raw: unknown) =>
      Either.match(decodeReady(raw), {
        onLeft: () => Effect.logWarning("Discord READY without a user: the bot's own mentions stay in the text"),
        onRight: (ready) =>
          Effect.gen(function*() {
            yield* Ref.set(botUser, Option.some(ready.user))
            // Every READY is a new session: what it did not replay is fetched.
            if (readies++ === 0) yield* checkChannels(ready.application?.id)
            yield* catchUp
          })
      })

    const handle = (payload: GatewayDispatchPayload): Effect.Effect<void> => {
      switch (payload.t) {
        case "READY":
          return onReady(payload.d)
        case "MESSAGE_CREATE":
          return Either.match(decodeMessage(payload.d), {
            onLeft: () => Effect.logDebug("Ignored a MESSAGE_CREATE that does not decode"),
            onRight: onMessage
          })
        case "INTERACTION_CREATE":
          return onInteraction(payload.d)
        case "THREAD_CREATE":
        case "THREAD_UPDATE":
          return kinds.learn(payload.d)
        case "GUILD_CREATE":
        case "THREAD_LIST_SYNC":
          return kinds.learnThreadsOf(payload.d)
        default:
          return Effect.void
      }
    }

    yield* Queue.take(dispatches).pipe(
      Effect.flatMap((payload) =>
        handle(payload).pipe(
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.interrupt
              : Effect.logError(`Discord bridge: handling ${payload.t} failed`, cause)
          )
        )
      ),
      Effect.forever,
      Effect.forkScoped
    )

    return {
      messages,
      botUser: Ref.get(botUser),
      onDispatch: (payload) =>
        Effect.zipRight(
          // The bot's name is known as soon as the login returns; the rest of READY is handled in order.
          payload.t === "READY"
            ? Either.match(decodeReady(payload.d), {
              onLeft: () => Effect.void,
              onRight: (ready) => Ref.set(botUser, Option.some(ready.user))
            })
            : Effect.void,
          Queue.offer(dispatches, payload)
        )
    }
  })
