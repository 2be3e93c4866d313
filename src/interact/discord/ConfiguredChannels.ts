/**
 * The check of each configured channel at the first READY: a warning if
 * the bot cannot see it (403, 404) or it is a category, its catch-up seeded
 * where nothing was handled yet, and the slash commands registered in its
 * server.
 *
 * When Discord fails instead (5xx, a 429, network, timeout), that is what
 * the log says, not that the bot lacks access; the lookup, in the channel's
 * lane, and the registration are tried again later (1 s doubling to a
 * minute, or as long as a 429 asked), until Discord answers, rather than
 * left until the next restart.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { CatchUpState } from "./CatchUp.js"
import type { ChannelInfo, ChannelKinds } from "./ChannelKinds.js"
import type { DiscordRest } from "./DiscordRest.js"
import { describeRestError, isNotVisible, isPermanent, rateLimitWait } from "./Refusals.js"
import * as SlashCommands from "./SlashCommands.js"

/** Tries after Discord failed: 1 s doubling to a minute, each at least as long as a 429 asked. */
export const discordRetries = Schedule.exponential("1 second").pipe(
  Schedule.setInputType<unknown>(),
  Schedule.modifyDelay(({ duration, input }) =>
    Effect.succeed(Duration.max(Duration.min(duration, Duration.minutes(1)), Duration.millis(rateLimitWait(input))))
  )
)

/** A server category: it groups channels, and holds no messages of its own. */
const categoryType = 4

/** Discord's own answer (a 4xx, or a 200 that is no channel): asking again cannot help. */
const isRefusal = (cause: unknown): boolean => isPermanent(cause) || Schema.isSchemaError(cause)

/** The first wait after Discord failed with `cause`: a second, or as long as its 429 asked. */
const firstWait = (cause: unknown) => Duration.max(Duration.seconds(1), Duration.millis(rateLimitWait(cause)))

export interface ConfiguredChannelsOptions {
  readonly rest: DiscordRest
  readonly kinds: ChannelKinds
  readonly state: CatchUpState
  /** Runs `work` in the channel's lane, after what is queued there. */
  readonly inLane: (channel: string, what: string, work: Effect.Effect<void>) => Effect.Effect<void>
}

export interface ConfiguredChannels {
  /** Checks a configured channel (run in its lane); true when its catch-up was seeded: nothing can have been missed there. */
  readonly check: (channelId: string, applicationId: string | undefined) => Effect.Effect<boolean>
}

export const make = (options: ConfiguredChannelsOptions): Effect.Effect<ConfiguredChannels, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { inLane, kinds, rest, state } = options
    const retrying = yield* FiberMap.make<string>()
    // Servers whose commands are registered, or being.
    const commandGuilds = new Set<string>()

    /** Runs `again` after Discord failed with `cause`, and while it keeps failing, on `discordRetries`. */
    const tryLater = (key: string, cause: unknown, again: Effect.Effect<void, unknown>) =>
      FiberMap.run(
        retrying,
        key,
        again.pipe(Effect.delay(firstWait(cause)), Effect.retry(discordRetries), Effect.ignore),
        { onlyIfMissing: true }
      ).pipe(Effect.asVoid)

    const register = (guildId: string, applicationId: string) =>
      Effect.gen(function*() {
        if (commandGuilds.has(guildId)) return
        commandGuilds.add(guildId)
        const done = yield* Effect.result(SlashCommands.registerCommands(rest, applicationId, guildId))
        if (Result.isSuccess(done)) return
        yield* Effect.logWarning(
          `Discord slash commands could not be registered in server ${guildId} yet: Discord is failing ` +
            `(${describeRestError(done.failure)}); trying again until it answers`
        )
        yield* tryLater(
          `commands ${guildId}`,
          done.failure,
          SlashCommands.registerCommands(rest, applicationId, guildId).pipe(
            Effect.andThen(Effect.logInfo(`Discord slash commands registered in server ${guildId} after all`))
          )
        )
      })

    /** What a lookup's answer asks for; true when the channel's catch-up was seeded. */
    const onLookedUp = (channelId: string, info: ChannelInfo, applicationId: string | undefined) =>
      Effect.gen(function*() {
        // The id Discord's "Copy Channel ID" gives for a category too: the bot would answer nothing there.
        if (info.type === categoryType) {
          yield* Effect.logWarning(
            `DISCORD_CHANNEL_ID: ${channelId} is a category, which holds no messages; give the ids of the channels ` +
              "in it instead (right-click each channel → Copy Channel ID)"
          )
        }
        const seeded = Option.isNone(yield* state.last(channelId))
        if (seeded) yield* state.record(channelId, info.last_message_id ?? "0")
        if (info.guild_id !== undefined && applicationId !== undefined) yield* register(info.guild_id, applicationId)
        return seeded
      })

    const onRefused = (channelId: string, cause: unknown) =>
      Effect.logWarning(
        isNotVisible(cause)
          ? `DISCORD_CHANNEL_ID: the bot cannot see channel ${channelId} (${describeRestError(cause)}); ` +
            "invite it to that server and give it View Channel, Read Message History and Send Messages there"
          : `DISCORD_CHANNEL_ID: Discord refused to describe channel ${channelId} (${describeRestError(cause)})`
      )

    /** One more try of the lookup, in the channel's lane; fails, with Discord's failure, while it lasts. */
    const lookUpAgain = (channelId: string, applicationId: string | undefined) =>
      Effect.gen(function*() {
        const outcome = yield* Deferred.make<void, unknown>()
        const attempt = kinds.lookup(channelId).pipe(
          Effect.flatMap((info) =>
            Effect.andThen(
              Effect.logInfo(`Discord channel ${channelId} looked up after all`),
              onLookedUp(channelId, info, applicationId)
            )
          ),
          Effect.catchIf(isRefusal, (cause) => onRefused(channelId, cause)),
          Effect.asVoid
        )
        yield* inLane(channelId, `looking up Discord channel ${channelId}`, Deferred.into(attempt, outcome).pipe(Effect.asVoid))
        yield* Deferred.await(outcome)
      })

    const check: ConfiguredChannels["check"] = (channelId, applicationId) =>
      kinds.lookup(channelId).pipe(
        Effect.flatMap((info) => onLookedUp(channelId, info, applicationId)),
        Effect.catch((cause) =>
          isRefusal(cause)
            ? Effect.as(onRefused(channelId, cause), false)
            : Effect.gen(function*() {
              yield* Effect.logWarning(
                `DISCORD_CHANNEL_ID: channel ${channelId} could not be looked up: Discord is failing ` +
                  `(${describeRestError(cause)}), not the bot's access; trying again until it answers, ` +
                  "and its server's slash commands wait for that"
              )
              yield* tryLater(`lookup ${channelId}`, cause, lookUpAgain(channelId, applicationId))
              return false
            })
        )
      )

    return { check }
  })
