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
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { withAttachments } from "./Attachments.js"
import * as ChannelKinds from "./ChannelKinds.js"
import { type CatchUpState, missedMessages } from "./CatchUp.js"
import type { DiscordRest } from "./DiscordRest.js"
import { decodeMessage, type GatewayMessage } from "./GatewayMessage.js"
import { handleInteraction } from "./HandleInteraction.js"
import { describeRestError } from "./Refusals.js"
import type { ReplyTarget } from "./ReplyTargets.js"
import { type CatchUpBounds, defaultAttachmentBytes, defaultCatchUp, type DiscordSettings, isAllowed } from "./Settings.js"
import * as SlashCommands from "./SlashCommands.js"
import type { TypingIndicator } from "./Typing.js"

const GatewayReady = Schema.Struct({
  user: Schema.Struct({ id: Schema.String, username: Schema.String }),
  application: Schema.optionalWith(Schema.Struct({ id: Schema.String }), { nullable: true })
})

/** The bot's own account, as READY names it. */
export type BotUser = typeof GatewayReady.Type["user"]

const decodeReady = Schema.decodeUnknownResult(GatewayReady)

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
    // Channels whose lookup failed, each with the id just before its first message not handled.
    const unchecked = new Map<string, string>()
    // A gap is caught up even with DISCORD_CATCH_UP off: its messages arrived while the bridge listened.
    const gapBounds: CatchUpBounds = catchUpBounds.messages === 0 ? defaultCatchUp : catchUpBounds
    const commandGuilds = new Set<string>()
    const seededNow = new Set<string>()
    let readies = 0

    const fresh = (id: string) =>
      Ref.modify(recentIds, (ids) =>
        ids.includes(id) ? [false, ids] : [true, [...ids.slice(1 - rememberedMessages), id]])

    const deliver = (message: DiscordMessage) =>
      Effect.andThen(typing.begin(message.channel), Queue.offer(messages, message))

    /** Filters, reads attachments, queues; remembers the message as handled in its channel either way. */
    const accept = (message: GatewayMessage, kind: ChannelKinds.ChannelKind) =>
      Effect.gen(function*() {
        // Repeats are caught by id (a RESUME replay, a message both caught up and dispatched); a new
        // session never replays what an earlier process handled, and catch-up fetches only what is newer.
        const bot = Option.getOrUndefined(yield* Ref.get(botUser))
        const text = withoutMention(message.content, bot?.id).trim()
        const mentioned = bot !== undefined && message.content.trim() !== "" && mentionOf(bot.id).test(message.content)
        const talk = !message.author.bot && message.author.id !== bot?.id && message.webhook_id === undefined &&
          (message.type === undefined || conversationalTypes.has(message.type)) && isAllowed(settings, message.author.id) &&
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

    /**
     * A message whose channel Discord could not describe: it is fetched with the channel's next message
     * that can be checked, or by the next session's catch-up (the state notes the channel from here on).
     */
    const leaveForLater = (message: GatewayMessage, failed: ChannelKinds.ChannelLookupFailed) =>
      Effect.gen(function*() {
        const before = /^\d{1,20}$/.test(message.id) ? String(BigInt(message.id) - 1n) : undefined
        if (before !== undefined && !unchecked.has(message.channel_id)) unchecked.set(message.channel_id, before)
        if (before !== undefined && Option.isNone(yield* state.last(message.channel_id))) {
          yield* state.record(message.channel_id, before)
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

    const onInteraction = handleInteraction({ rest, settings, kinds, fresh, deliver })

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
          Effect.catch((cause) =>
            Effect.logWarning(
              `DISCORD_CHANNEL_ID: the bot cannot see channel ${channelId} (${describeRestError(cause)}); ` +
                "invite it to that server and give it View Channel, Read Message History and Send Messages there"
            )
          )
        ), { discard: true })

    /** Answers what `channelId` got after `after`, in order, once, and says how much it found. */
    const catchUpChannel = (channelId: string, after: string, kind: ChannelKinds.ChannelKind, bounds: CatchUpBounds) =>
      Effect.gen(function*() {
        const missed = yield* missedMessages(rest, channelId, after, bounds).pipe(Effect.result)
        if (Result.isFailure(missed)) {
          return yield* Effect.logWarning(`Discord messages missed in channel ${channelId} could not be fetched: ${missed.failure}`)
        }
        unchecked.delete(channelId)
        const { dropped, messages: found, more } = missed.success
        const before = yield* Queue.size(messages)
        for (const raw of found) {
          const decoded = decodeMessage(raw)
          if (Result.isSuccess(decoded)) yield* accept(decoded.success, kind)
        }
        const answered = (yield* Queue.size(messages)) - before
        if (found.length > 0 || dropped > 0 || more) {
          yield* Effect.logInfo(
            `Discord channel ${channelId}: ${found.length} message(s) sent while the bridge was away, ` +
              `${answered} to answer` +
              (dropped > 0 || more ? `; ${dropped}${more ? " or more" : ""} older one(s) beyond DISCORD_CATCH_UP skipped` : "")
          )
        }
      })

    /** Answers what the channels got while the bridge was away, in order, once. */
    const catchUp = Effect.gen(function*() {
      if (catchUpBounds.messages === 0) return
      for (const [channelId, after] of yield* state.all) {
        if (seededNow.delete(channelId)) continue
        const kind = yield* kinds.ofId(channelId).pipe(
          Effect.catchTag("ChannelLookupFailed", (failed) =>
            Effect.as(
              Effect.logWarning(`Discord channel ${channelId} could not be looked up (${failed.message}); caught up next time`),
              undefined
            ))
        )
        if (kind !== undefined) yield* catchUpChannel(channelId, after, kind, catchUpBounds)
      }
    })

    const onReady = (raw: unknown) =>
      Result.match(decodeReady(raw), {
        onFailure: () => Effect.logWarning("Discord READY without a user: the bot's own mentions stay in the text"),
        onSuccess: (ready) =>
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
          return Result.match(decodeMessage(payload.d), {
            onFailure: () => Effect.logDebug("Ignored a MESSAGE_CREATE that does not decode"),
            onSuccess: onMessage
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
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
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
        Effect.andThen(
          // The bot's name is known as soon as the login returns; the rest of READY is handled in order.
          payload.t === "READY"
            ? Result.match(decodeReady(payload.d), {
              onFailure: () => Effect.void,
              onSuccess: (ready) => Ref.set(botUser, Option.some(ready.user))
            })
            : Effect.void,
          Queue.offer(dispatches, payload)
        )
    }
  })
