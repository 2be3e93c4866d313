/**
 * Catch-up: the last message handled in each channel, kept in a small JSON
 * file beside the memory (replaced whole, atomically), and the messages a
 * channel got after it, fetched over REST once the bridge is back (after a
 * restart, a fresh identify, a resume that could not replay), the newest
 * first, bounded by DISCORD_CATCH_UP.
 */
import * as path from "node:path"
import { Routes } from "discord.js"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SafeFile from "../../runtime/SafeFile.js"
import type { DiscordRest } from "./DiscordRest.js"
import { describeRestError, isPermanent, rateLimitWait } from "./Refusals.js"
import type { CatchUpBounds } from "./Settings.js"

/** The state file's name, in PLANCKCLAW_DIR (run) or PLANCKCLAW_AGENTS_DIR (serve). */
export const stateFileName = "discord-catch-up.json"

export const stateFileIn = (directory: string): string => path.join(directory, stateFileName)

const StateFile = Schema.Struct({
  version: Schema.Literal(1),
  channels: Schema.Record(Schema.String, Schema.String)
})
const decodeState = Schema.decodeUnknownResult(Schema.fromJsonString(StateFile))

/** Snowflakes grow with time; compared as numbers, never as strings of different lengths. */
export const isAfter = (id: string, than: string): boolean => BigInt(id) > BigInt(than)

const discordEpoch = 1_420_070_400_000

/** The smallest snowflake of the millisecond `at`. */
export const snowflakeAt = (at: number): string => at <= discordEpoch ? "0" : String(BigInt(at - discordEpoch) << 22n)

export interface CatchUpState {
  /** Channels with a message handled, and the last of them. */
  readonly all: Effect.Effect<ReadonlyMap<string, string>>
  readonly last: (channel: string) => Effect.Effect<Option.Option<string>>
  /** Remembers `messageId` as handled in `channel` if it is newer than the one remembered. */
  readonly record: (channel: string, messageId: string) => Effect.Effect<void>
}

/** The state kept in `file` (none: in memory only, for a bridge without a memory directory). */
export const makeState = (file: Option.Option<string>): Effect.Effect<CatchUpState> =>
  Effect.gen(function*() {
    const channels = new Map<string, string>()
    if (Option.isSome(file)) {
      const read = SafeFile.read(file.value)
      if (Result.isFailure(read)) {
        yield* Effect.logWarning(`Discord catch-up state unreadable (${read.failure.message}); starting without it`)
      } else if (read.success !== undefined) {
        const state = decodeState(read.success)
        if (Result.isFailure(state)) {
          yield* Effect.logWarning(`Discord catch-up state ${file.value} is not valid; starting without it`)
        } else {
          for (const [channel, id] of Object.entries(state.success.channels)) channels.set(channel, id)
        }
      }
    }
    let warned = false
    const save = Option.match(file, {
      onNone: () => Effect.void,
      onSome: (file) =>
        Effect.suspend(() => {
          const written = SafeFile.replace(file, JSON.stringify({ version: 1, channels: Object.fromEntries(channels) }))
          if (Result.isSuccess(written) || warned) return Effect.void
          warned = true
          return Effect.logWarning(`Discord catch-up state not saved: ${written.failure.message}`)
        })
    })
    return {
      all: Effect.sync(() => new Map(channels)),
      last: (channel) => Effect.sync(() => Option.fromNullishOr(channels.get(channel))),
      record: (channel, messageId) =>
        Effect.suspend(() => {
          const known = channels.get(channel)
          if (known !== undefined && !isAfter(messageId, known)) return Effect.void
          channels.set(channel, messageId)
          return save
        })
    }
  })

/** Discord did not give the messages a channel got (5xx, network, timeout; or refused them, `permanent`). */
export class HistoryReadFailed extends Data.TaggedError("HistoryReadFailed")<{
  /** What the last attempt got, for the log. */
  readonly message: string
  /** Discord refused (403, 404, a 4xx): asking again cannot help. */
  readonly permanent: boolean
  /** How long (ms) a 429 asked to wait before asking again; 0 for another failure. */
  readonly retryAfter: number
}> {}

/** A page of GET /channels/{id}/messages, Discord's largest. */
const pageSize = 100
/**
 * Pages read per channel at most: DISCORD_CATCH_UP keeps at most 1000
 * messages, and the bridge's own replies and other bots' messages, read but
 * not counted, may be as many again.
 */
export const maxPages = 21

const idOf = (message: unknown): string | undefined => {
  const id = (message as { id?: unknown } | null)?.id
  return typeof id === "string" && /^\d{1,20}$/.test(id) ? id : undefined
}

const byId = (a: { readonly id: string }, b: { readonly id: string }) =>
  BigInt(a.id) < BigInt(b.id) ? -1 : BigInt(a.id) > BigInt(b.id) ? 1 : 0

export interface MissedMessages<A> {
  /** As `read` made them, oldest first. */
  readonly messages: ReadonlyArray<A>
  /** Older ones read and left out: past the window. */
  readonly dropped: number
  /** Older ones left unread because the window was full. */
  readonly more: boolean
  /** Older ones left unread because `maxPages` were read before the window was full. */
  readonly pageLimited: boolean
  /** The newest message read after `afterId`, counted or not: catch-up may pass it once the others are handled. */
  readonly newest: string | undefined
}

/**
 * The messages of `channel` after `afterId`, oldest first: the last
 * `bounds.messages` of those `read` makes something of (the ones the bridge
 * could answer, decoded: not its own replies, nor another bot's), none older than
 * `bounds.hours`. The others are read but take no place in the window, so
 * the bridge's replies posted during a burst cannot push the burst's older
 * messages out of it after a kill. Read backwards from the newest, page by
 * page, until `afterId` or enough: in a flood the newest are the ones to answer.
 */
export const missedMessages = <A>(
  rest: DiscordRest,
  channel: string,
  afterId: string,
  bounds: CatchUpBounds,
  read: (message: unknown) => A | undefined
): Effect.Effect<MissedMessages<A>, HistoryReadFailed> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const oldest = snowflakeAt(now - bounds.hours * 3_600_000)
    const after = isAfter(oldest, afterId) ? oldest : afterId
    const found = new Map<string, A>()
    let newest: string | undefined
    let before: string | undefined = undefined
    let more = false
    let pageLimited = false
    for (let page = 0;; page++) {
      if (found.size >= bounds.messages) {
        more = true
        break
      }
      if (page === maxPages) {
        pageLimited = true
        break
      }
      const query: Record<string, string> = before === undefined
        ? { limit: String(pageSize) }
        : { before, limit: String(pageSize) }
      const body = yield* rest.get(Routes.channelMessages(channel), query).pipe(
        Effect.mapError((cause) => new HistoryReadFailed({
          message: describeRestError(cause),
          permanent: isPermanent(cause),
          retryAfter: rateLimitWait(cause)
        }))
      )
      const messages = (Array.isArray(body) ? body : []).flatMap((message: unknown) => {
        const id = idOf(message)
        return id === undefined ? [] : [{ id, message }]
      })
      for (const { id, message } of messages) {
        if (!isAfter(id, after)) continue
        if (newest === undefined || isAfter(id, newest)) newest = id
        const counted = read(message)
        if (counted !== undefined) found.set(id, counted)
      }
      const oldestRead = messages.reduce<string | undefined>(
        (least, next) => least === undefined || isAfter(least, next.id) ? next.id : least,
        undefined
      )
      // A short page is the channel's start; a page reaching `after` is all that was missed.
      if (messages.length < pageSize || oldestRead === undefined || !isAfter(oldestRead, after)) break
      before = oldestRead
    }
    const sorted = [...found].map(([id, message]) => ({ id, message })).sort(byId)
    const kept = sorted.slice(Math.max(0, sorted.length - bounds.messages))
    return { messages: kept.map((entry) => entry.message), dropped: sorted.length - kept.length, more, pageLimited, newest }
  })
