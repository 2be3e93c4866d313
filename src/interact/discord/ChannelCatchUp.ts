/**
 * What runs in a channel's lane (see Inbound): its messages, each after a
 * lookup of what the channel is when it is new; and, at every new session,
 * the messages it got while the bridge was away (CatchUp).
 *
 * When Discord cannot say what a channel is, or cannot give the messages it
 * missed (5xx, network), the channel has a gap: from the last message
 * handled there, nothing is handled until the gap is fetched, so the
 * catch-up state never moves past it. The gap is tried again with each of
 * the channel's messages (which it then includes) and on a schedule (1 s,
 * doubling to a minute) until Discord answers; only a refusal (403, 404)
 * ends it unfetched. After a long 429 (DiscordRest hands it back), nothing
 * is asked there until the wait Discord gave is over.
 *
 * A message read over REST does not name its server: it is given its
 * channel's (ChannelKinds.guildOf), so it reaches the agent a live one
 * would (DISCORD_AGENT_PER=server). A server Discord cannot say yet leaves
 * a gap, as a failed read does; one it will not say leaves the messages
 * unanswered, logged, rather than sent to the wrong agent.
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as FiberMap from "effect/FiberMap"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as ChannelKinds from "./ChannelKinds.js"
import * as ConfiguredChannels from "./ConfiguredChannels.js"
import { type CatchUpState, HistoryReadFailed, maxPages, missedMessages } from "./CatchUp.js"
import type { DiscordRest } from "./DiscordRest.js"
import { decodeMessage, type GatewayMessage } from "./GatewayMessage.js"
import { type CatchUpBounds, defaultCatchUp, type DiscordSettings } from "./Settings.js"

export interface ChannelCatchUpOptions {
  readonly settings: DiscordSettings
  readonly rest: DiscordRest
  readonly state: CatchUpState
  readonly kinds: ChannelKinds.ChannelKinds
  /** Filters and queues a message of a channel of `kind`; true when it was queued for the agent. */
  readonly accept: (message: GatewayMessage, kind: ChannelKinds.ChannelKind) => Effect.Effect<boolean>
  /** Whether a message is one the bridge could answer (not a bot's, not filtered out): only those fill DISCORD_CATCH_UP. */
  readonly counts: (message: GatewayMessage) => boolean
  /** `messageId` in `channel` was handled without being handed on (Checkpoints.passed). */
  readonly passed: (channel: string, messageId: string) => Effect.Effect<void>
  /** Runs `work` in the channel's lane, after what is queued there. */
  readonly inLane: (channel: string, what: string, work: Effect.Effect<void>) => Effect.Effect<void>
}

export interface ChannelCatchUp {
  /** A message from the gateway; run in its channel's lane. */
  readonly onMessage: (message: GatewayMessage) => Effect.Effect<void>
  /** What a new session asks of each channel (its lane's next work): checks at the first, then catch-up. */
  readonly sessionWork: (
    first: boolean,
    applicationId: string | undefined
  ) => Effect.Effect<ReadonlyArray<readonly [string, Effect.Effect<void>]>>
  /**
   * The catch-up of threads a GUILD_CREATE lists (the server's active threads, after each READY) that the
   * bridge has never handled a message in, under a channel it had: made while it was away.
   */
  readonly newThreadsWork: (guildCreate: unknown) => ReadonlyArray<readonly [string, Effect.Effect<void>]>
}

/**
 * Tries of a gap after the first failure: 1 s, doubling to a minute, while it lasts; each at least as
 * long as Discord's last 429 asked (the input: what is left of that wait, in ms).
 */
export const gapRetries = Schedule.exponential("1 second").pipe(
  Schedule.setInputType<number>(),
  Schedule.modifyDelay(({ duration, input }) =>
    Effect.succeed(Duration.max(Duration.min(duration, Duration.minutes(1)), Duration.millis(input)))
  )
)

const before = (id: string): string | undefined => /^\d{1,20}$/.test(id) ? String(BigInt(id) - 1n) : undefined

export const make = (options: ChannelCatchUpOptions): Effect.Effect<ChannelCatchUp, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { accept, inLane, kinds, passed, rest, settings, state } = options
    // Decoded once: those the bridge could answer, the only ones the window counts.
    const read = (raw: unknown): GatewayMessage | undefined => {
      const decoded = decodeMessage(raw)
      return Result.isSuccess(decoded) && options.counts(decoded.success) ? decoded.success : undefined
    }
    const catchUpBounds = settings.catchUp ?? defaultCatchUp
    // A gap is caught up even with DISCORD_CATCH_UP off: its messages arrived while the bridge listened.
    const gapBounds: CatchUpBounds = catchUpBounds.messages === 0 ? defaultCatchUp : catchUpBounds
    // Channels with a gap, each with the id just before its first message not handled. Read and
    // changed only in the channel's lane.
    const gaps = new Map<string, string>()
    // When a channel's gap may be asked for again, after a 429 (Clock millis): until then, nothing is asked.
    const notBefore = new Map<string, number>()
    /** What is left (ms) of the wait Discord asked for in the channel; 0 once over. */
    const waitLeft = (channelId: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => Math.max(0, (notBefore.get(channelId) ?? 0) - now))
    /** Notes the wait a failure asked for, if any. */
    const noteWait = (channelId: string, failure: { readonly retryAfter: number }) =>
      failure.retryAfter <= 0
        ? Effect.void
        : Effect.map(Clock.currentTimeMillis, (now) => void notBefore.set(channelId, now + failure.retryAfter))
    const retrying = yield* FiberMap.make<string>()
    const configuredChannels = yield* ConfiguredChannels.make({ rest, kinds, state, inLane })
    // The state as the current session began, and the threads it caught up that the state did not name.
    let sessionStart: ReadonlyMap<string, string> = new Map()
    const newThreadsCaughtUp = new Set<string>()

    /** The server of the channel's messages read over REST, which do not name it; none for direct messages. */
    const serverOf = (channelId: string, kind: ChannelKinds.ChannelKind, found: ReadonlyArray<GatewayMessage>) =>
      Effect.gen(function*() {
        if (kind === "direct" || found.every((message) => message.guild_id !== undefined)) return undefined
        const guild = yield* kinds.guildOf(channelId)
        if (guild !== undefined) return guild
        return yield* new HistoryReadFailed({ message: "Discord would not say which server the channel is in", permanent: true, retryAfter: 0 })
      })

    /** Answers what `channelId` got after `after`, in order, once, and says how much it found. */
    const catchUpChannel = (channelId: string, after: string, kind: ChannelKinds.ChannelKind, bounds: CatchUpBounds) =>
      Effect.gen(function*() {
        const { dropped, messages: found, more, newest, pageLimited } = yield* missedMessages(rest, channelId, after, bounds, read)
        const guild = yield* serverOf(channelId, kind, found)
        let answered = 0
        for (const message of found) if (yield* accept({ ...message, guild_id: message.guild_id ?? guild }, kind)) answered++
        // What was read and not counted (the bridge's replies, other bots'): passed too, not read again next session.
        if (newest !== undefined) yield* passed(channelId, newest)
        if (found.length > 0 || dropped > 0 || more || pageLimited) {
          yield* Effect.logInfo(
            `Discord channel ${channelId}: ${found.length} message(s) sent while the bridge was away, ` +
              `${answered} to answer` +
              (dropped > 0 || more ? `; ${dropped}${more ? " or more" : ""} older one(s) beyond DISCORD_CATCH_UP skipped` : "") +
              (pageLimited ? `; older ones not read (at most ${maxPages * 100} messages are read per channel)` : "")
          )
        }
      })

    /** Fetches the channel's gap; true once it is closed (fetched, not ours, or refused for good). */
    const fillGap = (channelId: string): Effect.Effect<boolean> =>
      Effect.gen(function*() {
        const after = gaps.get(channelId)
        if (after === undefined) return true
        if ((yield* waitLeft(channelId)) > 0) return false
        const kind = yield* Effect.result(kinds.ofId(channelId))
        if (Result.isFailure(kind)) return yield* Effect.as(noteWait(channelId, kind.failure), false)
        const fetched = kind.success === undefined
          ? Result.succeed(undefined)
          : yield* Effect.result(catchUpChannel(channelId, after, kind.success, gapBounds))
        if (Result.isFailure(fetched) && (fetched.failure._tag === "ChannelLookupFailed" || !fetched.failure.permanent)) {
          return yield* Effect.as(noteWait(channelId, fetched.failure), false)
        }
        gaps.delete(channelId)
        notBefore.delete(channelId)
        if (Result.isFailure(fetched)) {
          yield* Effect.logWarning(
            `Discord refused the messages missed in channel ${channelId} (${fetched.failure.message}); they are not answered`
          )
        }
        return true
      })

    /** One try of the gap in the channel's lane; fails while the gap stays open, with what is left of a 429's wait. */
    const tryGap = (channelId: string) =>
      Effect.gen(function*() {
        const closed = yield* Deferred.make<boolean>()
        yield* inLane(channelId, `fetching the gap in Discord channel ${channelId}`, Effect.flatMap(fillGap(channelId), (done) => Deferred.succeed(closed, done)))
        if (!(yield* Deferred.await(closed))) return yield* Effect.fail(yield* waitLeft(channelId))
      })

    /** Remembers the gap (the earliest, if one is open already) and tries it again on the schedule. */
    const openGap = (channelId: string, after: string, failure: { readonly retryAfter: number }, why: string) =>
      Effect.gen(function*() {
        if (!gaps.has(channelId)) gaps.set(channelId, after)
        yield* noteWait(channelId, failure)
        yield* Effect.logWarning(why)
        const firstTry = Duration.max(Duration.seconds(1), Duration.millis(yield* waitLeft(channelId)))
        yield* FiberMap.run(
          retrying,
          channelId,
          tryGap(channelId).pipe(Effect.delay(firstTry), Effect.retry({ schedule: gapRetries }), Effect.ignore),
          { onlyIfMissing: true }
        )
      })

    const gapWarning = (channelId: string, failure: ChannelKinds.ChannelLookupFailed | HistoryReadFailed) =>
      failure._tag === "ChannelLookupFailed"
        ? `Discord channel ${channelId} could not be looked up (${failure.message})`
        : `Discord messages missed in channel ${channelId} could not be fetched (${failure.message})`

    const onMessage = (message: GatewayMessage) =>
      Effect.gen(function*() {
        const channelId = message.channel_id
        // A gap comes first: this message is among what it fetches. While it stays open, so does this.
        if (gaps.has(channelId) && !(yield* fillGap(channelId))) {
          return yield* Effect.logDebug(`Discord message ${message.id} waits for the gap in channel ${channelId}`)
        }
        const kind = yield* kinds.of({ channelId, guildId: message.guild_id, channelType: message.channel_type }).pipe(Effect.result)
        if (Result.isFailure(kind)) {
          const gap = before(message.id)
          if (gap === undefined) return
          // The state notes the channel from here on, so a restart catches it up too.
          if (Option.isNone(yield* state.last(channelId))) yield* state.record(channelId, gap)
          return yield* openGap(channelId, gap, kind.failure, `${gapWarning(channelId, kind.failure)}; message ${message.id} there is answered once it can be`)
        }
        if (kind.success !== undefined) yield* accept(message, kind.success)
      })

    /** Answers what the channel got after `after` while the bridge was away, in order, once; else leaves a gap. */
    const catchUpFrom = (channelId: string, after: string) =>
      Effect.gen(function*() {
        if (gaps.has(channelId)) return void (yield* fillGap(channelId))
        const caught = yield* kinds.ofId(channelId).pipe(
          Effect.flatMap((kind) => kind === undefined ? Effect.void : catchUpChannel(channelId, after, kind, catchUpBounds)),
          Effect.result
        )
        if (Result.isSuccess(caught)) return
        if (caught.failure._tag === "HistoryReadFailed" && caught.failure.permanent) {
          return yield* Effect.logWarning(`${gapWarning(channelId, caught.failure)}; they are not answered`)
        }
        yield* openGap(channelId, after, caught.failure, `${gapWarning(channelId, caught.failure)}; fetched once Discord answers`)
      })

    const sessionWork: ChannelCatchUp["sessionWork"] = (first, applicationId) =>
      Effect.map(state.all, (handled) => {
        sessionStart = handled
        newThreadsCaughtUp.clear()
        const catchingUp = catchUpBounds.messages > 0
        const work = new Map<string, Effect.Effect<void>>()
        if (first) {
          for (const channelId of settings.channelIds) {
            const after = handled.get(channelId)
            work.set(
              channelId,
              Effect.flatMap(configuredChannels.check(channelId, applicationId), (seeded) =>
                seeded || !catchingUp || after === undefined ? Effect.void : catchUpFrom(channelId, after))
            )
          }
        }
        if (catchingUp) {
          for (const [channelId, after] of handled) if (!work.has(channelId)) work.set(channelId, catchUpFrom(channelId, after))
        }
        return [...work]
      })

    const configured = new Set(settings.channelIds)

    // A thread the state does not name had no message while the bridge listened (each moves the state), so
    // what it holds after its channel's last message handled was sent while the bridge was away; that message
    // is from before this session's catch-up, so a thread is not cut short by its channel's newer messages.
    const newThreadsWork: ChannelCatchUp["newThreadsWork"] = (guildCreate) =>
      catchUpBounds.messages === 0 ? [] : ChannelKinds.threadsOf(guildCreate).flatMap((thread) => {
        const after = thread.parent_id === undefined || !configured.has(thread.parent_id)
          ? undefined
          : sessionStart.get(thread.parent_id)
        if (after === undefined || sessionStart.has(thread.id) || newThreadsCaughtUp.has(thread.id)) return []
        newThreadsCaughtUp.add(thread.id)
        return [[thread.id, catchUpFrom(thread.id, after)] as const]
      })

    return { onMessage, sessionWork, newThreadsWork }
  })
