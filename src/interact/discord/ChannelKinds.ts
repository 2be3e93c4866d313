/**
 * Which channels are the adapter's: the configured ones, threads under them
 * (learnt from THREAD_CREATE, GUILD_CREATE and THREAD_LIST_SYNC, or looked up
 * over REST for a message from a channel not seen before), and direct
 * messages when they are answered. Only Discord's definite answers are kept
 * (the channel, or 403/404); a lookup failing otherwise is retried a few
 * times, then reported, and asked again next time.
 *
 * Also the server of each of the adapter's channels, learnt where Discord
 * says it (a live message, a lookup, THREAD_CREATE, GUILD_CREATE): a message
 * read over REST (catch-up) does not name its server.
 *
 * Both are forgotten when Discord deletes the channel or thread (or its
 * parent), or the bot leaves the server, and only the most recently used
 * `rememberedChannels` are kept: a bot that runs for months sees every
 * thread made in every server it is in. What is forgotten is looked up again
 * if it is ever needed, as after a restart, so no answer changes.
 */
import { Routes } from "discord.js"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type { DiscordRest } from "./DiscordRest.js"
import * as RecentlyUsed from "./RecentlyUsed.js"
import { describeRestError, isNotVisible, rateLimitWait } from "./Refusals.js"
import type { DiscordSettings } from "./Settings.js"
import { nullable } from "./Nullable.js"

export type ChannelKind = "channel" | "thread" | "direct"

/** A channel as GET /channels/{id}, THREAD_CREATE and GUILD_CREATE's threads describe it. */
export const ChannelInfo = Schema.Struct({
  id: Schema.String,
  type: Schema.Number,
  guild_id: nullable(Schema.String),
  parent_id: nullable(Schema.String),
  last_message_id: nullable(Schema.String)
})
export type ChannelInfo = typeof ChannelInfo.Type

const decodeChannel = Schema.decodeUnknownResult(ChannelInfo)
const GuildThreads = Schema.Struct({
  // GUILD_CREATE's own id; THREAD_LIST_SYNC's guild_id. GUILD_CREATE's channels leave out their guild_id.
  id: nullable(Schema.String),
  guild_id: nullable(Schema.String),
  channels: Schema.Array(Schema.Unknown).pipe(Schema.withDecodingDefaultType(Effect.succeed([]))),
  threads: Schema.Array(Schema.Unknown).pipe(Schema.withDecodingDefaultType(Effect.succeed([])))
})
const decodeGuildThreads = Schema.decodeUnknownResult(GuildThreads)
// THREAD_DELETE, CHANNEL_DELETE (a channel object) and GUILD_DELETE (unavailable: an outage, not a departure).
const Gone = Schema.Struct({ id: Schema.String, unavailable: nullable(Schema.Boolean) })
const decodeGone = Schema.decodeUnknownResult(Gone)

/**
 * Channels and threads remembered at most (and as many servers of the adapter's own), the most recently
 * used: far more than a session touches, a few megabytes at most.
 */
export const rememberedChannels = 10_000

const threadTypes = new Set([10, 11, 12])
const directTypes = new Set([1])

/** Where a message or an interaction says it comes from. */
export interface Origin {
  readonly channelId: string
  readonly guildId?: string | undefined
  readonly channelType?: number | undefined
}

/** The threads a GUILD_CREATE or THREAD_LIST_SYNC lists (the server's active threads), decoded; others left out. */
export const threadsOf = (payload: unknown): ReadonlyArray<ChannelInfo> =>
  Result.match(decodeGuildThreads(payload), {
    onFailure: () => [],
    onSuccess: ({ threads }) =>
      threads.flatMap((thread) => Result.match(decodeChannel(thread), { onFailure: () => [], onSuccess: (info) => [info] }))
  })

/** Discord could not say what a channel is (5xx, network, timeout) even after the retries; nothing was remembered. */
export class ChannelLookupFailed extends Data.TaggedError("ChannelLookupFailed")<{
  readonly channelId: string
  /** What the last attempt got, for the log. */
  readonly message: string
  /** How long (ms) a 429 asked to wait before asking again; 0 for another failure. */
  readonly retryAfter: number
}> {}

/**
 * Retries of a failed lookup: 1 s, 2 s, 4 s, 8 s (15 s in all, besides the
 * requests). Dispatches wait meanwhile, so a thread's messages stay in order.
 * A long 429 is not retried so soon: the caller waits as long as it asked.
 */
export const lookupRetries = Schedule.exponential("1 second").pipe(Schedule.upTo({ times: 4 }))

/** Discord's own answer that the channel is not the bot's to see (or a 200 that is no channel): as final as a channel. */
const isDefinite = (cause: unknown): boolean => isNotVisible(cause) || Schema.isSchemaError(cause)

export interface ChannelKinds {
  /** What the channel is to the adapter; undefined when it is none of its business. */
  readonly of: (origin: Origin) => Effect.Effect<ChannelKind | undefined, ChannelLookupFailed>
  /** The same for a channel known only by its id (one the catch-up state names): looked up if need be. */
  readonly ofId: (channelId: string) => Effect.Effect<ChannelKind | undefined, ChannelLookupFailed>
  /** Learns a channel or thread from a dispatch (THREAD_CREATE, THREAD_UPDATE). */
  readonly learn: (channel: unknown) => Effect.Effect<void>
  /** Learns the channels and threads a GUILD_CREATE or THREAD_LIST_SYNC lists. */
  readonly learnThreadsOf: (payload: unknown) => Effect.Effect<void>
  /** GET /channels/{id}: what Discord says about a channel, or why it would not. */
  readonly lookup: (channelId: string) => Effect.Effect<ChannelInfo, unknown>
  /**
   * The server a channel or thread of the adapter's is in: as learnt, else
   * looked up (GET /channels/{id}, retried as `of` does). Undefined when
   * Discord names none or will not say (403, 404).
   */
  readonly guildOf: (channelId: string) => Effect.Effect<string | undefined, ChannelLookupFailed>
  /**
   * The channels and threads a THREAD_DELETE, CHANNEL_DELETE (with its threads) or GUILD_DELETE (the bot
   * left the server) makes gone, of those remembered; to `forget`, each after its lane's earlier work.
   */
  readonly goneWith: (event: "THREAD_DELETE" | "CHANNEL_DELETE" | "GUILD_DELETE", payload: unknown) => ReadonlyArray<string>
  /** Forgets what was learnt of a channel or thread: looked up again if it is ever needed. */
  readonly forget: (channelId: string) => Effect.Effect<void>
}

/** What a channel or thread is to the adapter (null: none of its business), and where it is, for forgetting it. */
interface Known {
  readonly kind: ChannelKind | null
  readonly guild: string | undefined
  readonly parent: string | undefined
}

export const make = (settings: DiscordSettings, rest: DiscordRest): ChannelKinds => {
  const configured = new Set(settings.channelIds)
  // Threads and channels seen, ours or not.
  const known = RecentlyUsed.make<Known>(rememberedChannels)
  // The server of each channel and thread of the adapter's (no others).
  const guilds = RecentlyUsed.make<string>(rememberedChannels)
  const isGuildKind = (kind: ChannelKind | null | undefined) => kind === "channel" || kind === "thread"
  const kindOf = (info: ChannelInfo): ChannelKind | null =>
    configured.has(info.id)
      ? "channel"
      : threadTypes.has(info.type) && info.parent_id !== undefined && configured.has(info.parent_id)
      ? "thread"
      : directTypes.has(info.type) && settings.directMessages
      ? "direct"
      : null
  /** Notes the server of `info` (of kind `kind`) when it is one of the adapter's; `guildId`: a listing's, which leaves it out. */
  const noteGuild = (info: ChannelInfo, kind: ChannelKind | null, guildId?: string) => {
    const guild = info.guild_id ?? guildId
    if (guild !== undefined && isGuildKind(kind)) guilds.set(info.id, guild)
  }
  const remember = (info: ChannelInfo, guildId?: string) => {
    const kind = kindOf(info)
    // A DM's too (its kind follows the settings, fixed for the process): a conversation in the catch-up
    // state is then looked up once, not at every new session.
    known.set(info.id, { kind, guild: info.guild_id ?? guildId, parent: info.parent_id })
    noteGuild(info, kind, guildId)
    return kind
  }
  const learn = (channel: unknown, guildId?: string) =>
    Effect.sync(() => Result.map(decodeChannel(channel), (info) => remember(info, guildId)))

  /** GET /channels/{id}, decoded; nothing noted. */
  const fetchChannel = (channelId: string) =>
    Effect.flatMap(rest.get(Routes.channel(channelId)), (body) =>
      Result.match(decodeChannel(body), {
        onFailure: (error) => Effect.fail(error),
        onSuccess: Effect.succeed
      }))

  const lookup = (channelId: string) =>
    Effect.tap(fetchChannel(channelId), (info) => Effect.sync(() => noteGuild(info, kindOf(info))))

  /**
   * A lookup (`get`) retried while a retry may help; Discord's definite
   * refusal (403, 404) is a success here: undefined.
   */
  const lookupRetried = (channelId: string, get: typeof fetchChannel) =>
    Effect.gen(function*() {
      const info = yield* get(channelId).pipe(
        Effect.retry({ schedule: lookupRetries, while: (cause) => !isDefinite(cause) && rateLimitWait(cause) === 0 }),
        Effect.result
      )
      if (Result.isSuccess(info)) return info.success
      if (isDefinite(info.failure)) return undefined
      return yield* new ChannelLookupFailed({
        channelId,
        message: describeRestError(info.failure),
        retryAfter: rateLimitWait(info.failure)
      })
    })

  const ofGuildChannel = (channelId: string) =>
    Effect.gen(function*() {
      if (configured.has(channelId)) return "channel" as const
      const seen = known.get(channelId)
      if (seen !== undefined) return seen.kind ?? undefined
      // Not seen before: looked up, and remembered once Discord has said what it is. A failure that
      // may pass is not remembered: it would drop every later message of the thread. `remember` notes
      // its server with the kind it works out, so the lookup notes nothing (the kind is worked out once).
      const info = yield* lookupRetried(channelId, fetchChannel)
      if (info !== undefined) return remember(info) ?? undefined
      yield* Effect.logDebug(`Discord channel ${channelId} is not the bot's to see; its messages are ignored`)
      known.set(channelId, { kind: null, guild: undefined, parent: undefined })
      return undefined
    })

  const guildOf = (channelId: string) =>
    Effect.suspend(() => {
      const seen = guilds.get(channelId)
      return seen !== undefined ? Effect.succeed(seen) : Effect.map(lookupRetried(channelId, lookup), (info) => info?.guild_id)
    })

  const goneWith: ChannelKinds["goneWith"] = (event, payload) =>
    Result.match(decodeGone(payload), {
      onFailure: () => [],
      onSuccess: ({ id, unavailable }) => {
        switch (event) {
          case "THREAD_DELETE":
            return [id]
          case "CHANNEL_DELETE":
            // Discord sends no THREAD_DELETE for the threads of a channel it deletes.
            return [id, ...known.keysWhere((entry) => entry.parent === id)]
          case "GUILD_DELETE":
            // An unavailable server comes back with a GUILD_CREATE; only one the bot left is gone.
            return unavailable === true
              ? []
              : [...new Set([...known.keysWhere((entry) => entry.guild === id), ...guilds.keysWhere((guild) => guild === id)])]
        }
      }
    })

  return {
    goneWith,
    forget: (channelId) =>
      Effect.sync(() => {
        known.delete(channelId)
        guilds.delete(channelId)
      }),
    learn: (channel) => learn(channel),
    lookup,
    guildOf,
    ofId: ofGuildChannel,
    learnThreadsOf: (payload) =>
      Result.match(decodeGuildThreads(payload), {
        onFailure: () => Effect.void,
        // A server's channels too: a message in one of them then needs no lookup to be ignored.
        onSuccess: ({ channels, guild_id, id, threads }) =>
          Effect.forEach([...channels, ...threads], (channel) => learn(channel, guild_id ?? id), { discard: true })
      }),
    of: (origin) =>
      !configured.has(origin.channelId) && origin.guildId === undefined &&
        (origin.channelType === undefined || directTypes.has(origin.channelType))
        ? Effect.succeed(settings.directMessages ? "direct" : undefined)
        : Effect.tap(ofGuildChannel(origin.channelId), (kind) =>
          Effect.sync(() => {
            if (origin.guildId !== undefined && isGuildKind(kind)) guilds.set(origin.channelId, origin.guildId)
          }))
  }
}
