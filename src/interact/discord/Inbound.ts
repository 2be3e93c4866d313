/**
 * Messages in: gateway dispatches decoded with Schema (a malformed one is
 * ignored, never thrown), filtered down to the messages the adapter answers,
 * and queued once each. The fiber taking dispatches only sorts them: the
 * REST calls some need (a thread's parent, a text attachment, the messages
 * missed while away) run in the message's channel lane (Lanes), in that
 * channel's order, so a request that stalls holds up its own channel only;
 * slash commands run in fibers of their own and are acknowledged at once.
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
import type { CatchUpState } from "./CatchUp.js"
import * as ChannelCatchUp from "./ChannelCatchUp.js"
import * as Checkpoints from "./Checkpoints.js"
import type { DiscordMessage } from "./DiscordBridge.js"
import type { DiscordRest } from "./DiscordRest.js"
import { decodeMessage, forwardedIn, type GatewayMessage } from "./GatewayMessage.js"
import { handleInteraction } from "./HandleInteraction.js"
import * as Lanes from "./Lanes.js"
import { defaultAttachmentBytes, type DiscordSettings, isAllowed } from "./Settings.js"
import type { TypingIndicator } from "./Typing.js"
import { nullable } from "./Nullable.js"

const GatewayReady = Schema.Struct({
  user: Schema.Struct({ id: Schema.String, username: Schema.String }),
  application: nullable(Schema.Struct({ id: Schema.String }))
})

/** The bot's own account, as READY names it. */
export type BotUser = typeof GatewayReady.Type["user"]

const decodeReady = Schema.decodeUnknownResult(GatewayReady)

export type { DiscordMessage } from "./DiscordBridge.js"

/** What the agent reads for a message that only mentions the bot: it was called, and answers. */
export const bareMentionText = "(mentioned you without a message)"

/** Ordinary messages and replies; joins, pins and other system messages are not talk. */
const conversationalTypes = new Set([0, 19])

/** Ids of recently accepted messages: a replayed or repeated MESSAGE_CREATE is answered once. */
const rememberedMessages = 1000

const mentionOf = (botUserId: string) => new RegExp(` ?<@!?${botUserId}> ?`, "g")

const withoutMention = (content: string, botUserId: string | undefined): string =>
  botUserId === undefined ? content : content.replace(mentionOf(botUserId), " ")

/** What the agent reads: the message's text and files, then each message it forwards, in a block of its own. */
const textFor = (text: string, message: GatewayMessage, attachmentBytes: number) =>
  Effect.gen(function*() {
    const own = yield* withAttachments(text, message.attachments, attachmentBytes)
    const forwarded = yield* Effect.forEach(forwardedIn(message), (forwarded) =>
      Effect.map(
        withAttachments(forwarded.content.trim(), forwarded.attachments, attachmentBytes),
        (body) => `[forwarded message]\n${body}\n[end of forwarded message]`
      ))
    return [own, ...forwarded].filter((part) => part !== "").join("\n\n")
  })

export interface Inbound {
  /** Accepted messages, each channel's in order; shut down with the scope. */
  readonly messages: Queue.Dequeue<DiscordMessage>
  /** Known once READY has arrived. */
  readonly botUser: Effect.Effect<Option.Option<BotUser>>
  /** Takes every gateway dispatch, in order; handled in the background. */
  readonly onDispatch: (payload: GatewayDispatchPayload) => Effect.Effect<void>
  /** The message is held durably by whoever took it: catch-up need not fetch it again (see Checkpoints). */
  readonly held: (message: DiscordMessage) => Effect.Effect<void>
}

export interface InboundOptions {
  readonly settings: DiscordSettings
  readonly typing: TypingIndicator
  readonly rest: DiscordRest
  readonly state: CatchUpState
}

/** The channel an INTERACTION_CREATE names, for its lane; an undecodable one is refused in any lane. */
const interactionChannel = (raw: unknown): string => {
  const fields = raw as { channel_id?: unknown; channel?: { id?: unknown } } | null
  const id = fields?.channel_id ?? fields?.channel?.id
  return typeof id === "string" ? id : ""
}

/** Logs what went wrong in background work, which must go on; an interruption is the scope ending. */
const logFailure = (what: string) => (cause: Cause.Cause<unknown>) =>
  Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.logError(`Discord bridge: ${what} failed`, cause)

/** Accepted messages show the typing indicator at once, until their reply is out. */
export const makeInbound = (options: InboundOptions): Effect.Effect<Inbound, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { rest, settings, state, typing } = options
    const attachmentBytes = settings.attachmentBytes ?? defaultAttachmentBytes
    const messages = yield* Effect.acquireRelease(Queue.unbounded<DiscordMessage>(), Queue.shutdown)
    const dispatches = yield* Effect.acquireRelease(Queue.unbounded<GatewayDispatchPayload>(), Queue.shutdown)
    const botUser = yield* Ref.make(Option.none<BotUser>())
    const recentIds = yield* Ref.make<ReadonlyArray<string>>([])
    const kinds = ChannelKinds.make(settings, rest)
    const checkpoints = Checkpoints.make(state)
    const lanes = yield* Lanes.make
    let readies = 0

    const fresh = (id: string) =>
      Ref.modify(recentIds, (ids) =>
        ids.includes(id) ? [false, ids] : [true, [...ids.slice(1 - rememberedMessages), id]])

    const deliver = (message: DiscordMessage) =>
      Effect.andThen(typing.begin(message.channel), Queue.offer(messages, message))

    /** A person's conversational message (no bot's, no webhook's, no join or pin), from someone DISCORD_ALLOWED_USERS lets in. */
    const fromSomeoneAllowed = (message: GatewayMessage): boolean =>
      !message.author.bot && message.webhook_id === undefined &&
      (message.type === undefined || conversationalTypes.has(message.type)) && isAllowed(settings, message.author.id)

    /**
     * Filters, reads attachments, queues; remembers the message as handled in its channel either way.
     * True when it was queued for the agent.
     */
    const accept = (message: GatewayMessage, kind: ChannelKinds.ChannelKind) =>
      Effect.gen(function*() {
        // Repeats are caught by id (a RESUME replay, a message both caught up and dispatched); a new
        // session never replays what an earlier process handled, and catch-up fetches only what is newer.
        const bot = Option.getOrUndefined(yield* Ref.get(botUser))
        const text = withoutMention(message.content, bot?.id).trim()
        const mentioned = bot !== undefined && message.content.trim() !== "" && mentionOf(bot.id).test(message.content)
        const talk = fromSomeoneAllowed(message) && message.author.id !== bot?.id &&
          (text !== "" || mentioned || message.attachments.length > 0 || forwardedIn(message).length > 0)
        const queued = talk && (yield* fresh(message.id))
        if (!queued) yield* checkpoints.passed(message.channel_id, message.id)
        else {
          yield* checkpoints.handedOn(message.channel_id, message.id)
          yield* deliver({
            channel: message.channel_id,
            kind,
            guildId: message.guild_id,
            authorId: message.author.id,
            authorName: message.member?.nick ?? message.author.global_name ?? message.author.username,
            text: yield* textFor(text === "" && mentioned ? bareMentionText : text, message, attachmentBytes),
            target: { _tag: "Message", messageId: message.id }
          })
        }
        return queued
      })

    /** Work for `channel`, after the work already queued there; a failure is logged, the lane goes on. */
    const inLane = (channel: string, what: string, work: Effect.Effect<void>) =>
      lanes.run(channel, work.pipe(Effect.catchCause(logFailure(what))))

    const channels = yield* ChannelCatchUp.make({ settings, rest, state, kinds, accept, counts: fromSomeoneAllowed, passed: checkpoints.passed, inLane })

    const onInteraction = handleInteraction({ rest, settings, kinds, fresh, deliver })

    /** Every READY is a new session: what it did not replay is fetched, each channel in its own lane. */
    const onReady = (raw: unknown) =>
      Result.match(decodeReady(raw), {
        onFailure: () => Effect.logWarning("Discord READY without a user: the bot's own mentions stay in the text"),
        onSuccess: (ready) =>
          Effect.gen(function*() {
            yield* Ref.set(botUser, Option.some(ready.user))
            const first = readies++ === 0
            for (const [channel, work] of yield* channels.sessionWork(first, ready.application?.id)) {
              yield* inLane(channel, `catching up Discord channel ${channel}`, work)
            }
          })
      })

    const handle = (payload: GatewayDispatchPayload): Effect.Effect<void> => {
      switch (payload.t) {
        case "READY":
          return onReady(payload.d)
        case "MESSAGE_CREATE":
          return Result.match(decodeMessage(payload.d), {
            onFailure: () => Effect.logDebug("Ignored a MESSAGE_CREATE that does not decode"),
            onSuccess: (message) => inLane(message.channel_id, `handling message ${message.id}`, channels.onMessage(message))
          })
        case "INTERACTION_CREATE":
          // A lane of their own per channel: acknowledged within Discord's three seconds whatever the
          // channel's messages wait for, and a channel's commands reach the agent in order.
          return inLane(`interactions in ${interactionChannel(payload.d)}`, "handling an interaction", onInteraction(payload.d))
        case "THREAD_CREATE":
        case "THREAD_UPDATE":
          return kinds.learn(payload.d)
        case "GUILD_CREATE":
          return Effect.andThen(
            kinds.learnThreadsOf(payload.d),
            Effect.forEach(channels.newThreadsWork(payload.d), ([thread, work]) =>
              inLane(thread, `catching up Discord thread ${thread}`, work), { discard: true })
          )
        case "THREAD_LIST_SYNC":
          return kinds.learnThreadsOf(payload.d)
        case "THREAD_DELETE":
        case "CHANNEL_DELETE":
        case "GUILD_DELETE":
          // In each channel's lane: a message there still waiting is handled as it would have been.
          return Effect.forEach(kinds.goneWith(payload.t, payload.d), (channel) =>
            inLane(channel, `forgetting Discord channel ${channel}`, kinds.forget(channel)), { discard: true })
        default:
          return Effect.void
      }
    }

    yield* Queue.take(dispatches).pipe(
      Effect.flatMap((payload) => handle(payload).pipe(Effect.catchCause(logFailure(`handling ${payload.t}`)))),
      Effect.forever,
      Effect.forkScoped
    )

    return {
      messages,
      botUser: Ref.get(botUser),
      held: (message) =>
        message.target._tag === "Message" ? checkpoints.held(message.channel, message.target.messageId) : Effect.void,
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
