/**
 * What Discord's refusals and failures mean: which are worth retrying, and
 * what to tell the user about the ones that are not.
 */
import { DiscordAPIError, DiscordjsError, DiscordjsErrorCodes, HTTPError, RateLimitError } from "discord.js"
import * as Data from "effect/Data"
import { describeError } from "../../runtime/Errors.js"
import { DiscordRefused } from "./DiscordRefused.js"

/** A login that may succeed later (Discord unreachable, 5xx): retried on the reconnect backoff. */
export class LoginFailed extends Data.TaggedError("LoginFailed")<{ readonly message: string }> {}

export const invalidTokenHelp = "Discord rejected DISCORD_BOT_TOKEN. In the Discord developer portal " +
  "(https://discord.com/developers/applications) open your application → Bot → Reset Token, " +
  "and put the new token in DISCORD_BOT_TOKEN."

/** Gateway close codes after which reconnecting cannot help, with what to do about each. */
export const fatalCloseCodes: ReadonlyMap<number, DiscordRefused> = new Map([
  [4004, new DiscordRefused({ reason: "token", message: `${invalidTokenHelp} (gateway close 4004)` })],
  [
    4014,
    new DiscordRefused({
      reason: "intent",
      message: "Discord refused the Message Content intent (gateway close 4014). In the Discord developer portal " +
        "(https://discord.com/developers/applications) open your application → Bot → Privileged Gateway Intents, " +
        "switch on Message Content Intent, save, and start again."
    })
  ],
  [4013, new DiscordRefused({ reason: "intent", message: "Discord rejected the gateway intents as invalid (gateway close 4013)." })],
  [
    4012,
    new DiscordRefused({
      reason: "gateway",
      message: "Discord rejected the gateway API version (gateway close 4012); upgrade discord.js."
    })
  ],
  [
    4011,
    new DiscordRefused({
      reason: "gateway",
      message: "Discord requires sharding for this bot (gateway close 4011): it is in too many servers for one connection."
    })
  ],
  [4010, new DiscordRefused({ reason: "gateway", message: "Discord rejected the shard settings (gateway close 4010)." })]
])

export const isTokenRejected = (cause: unknown): boolean =>
  (cause instanceof DiscordjsError && cause.code === DiscordjsErrorCodes.TokenInvalid) ||
  (cause instanceof DiscordAPIError && cause.status === 401)

/** Discord refused the request (4xx): retrying cannot help. A 429 is not a refusal: it says when to try again. */
export const isPermanent = (cause: unknown): boolean => cause instanceof DiscordAPIError

/** Discord's answer that a channel is not the bot's to see, or no longer exists (403, 404): its access, not an outage. */
export const isNotVisible = (cause: unknown): boolean =>
  cause instanceof DiscordAPIError && (cause.status === 403 || cause.status === 404)

/**
 * How long a 429 asked to wait (ms): 0 for anything else, or a 429 without
 * Retry-After. A retry waits at least this long.
 */
export const rateLimitWait = (cause: unknown): number =>
  cause instanceof RateLimitError && cause.retryAfter > 0 ? cause.retryAfter : 0

/** One line for the log, with a hint where the usual fix is known. */
export const describeRestError = (cause: unknown): string => {
  if (cause instanceof DiscordAPIError) {
    const hint = cause.status === 403
      ? " (the bot needs View Channel and Send Messages there)"
      : cause.status === 401
      ? " (the bot token was rejected)"
      : ""
    return `${cause.status} ${cause.message}${hint}`
  }
  if (cause instanceof HTTPError) return `${cause.status} ${cause.message}`
  if (cause instanceof RateLimitError) {
    return cause.retryAfter > 0
      ? `rate limited by Discord for ${Math.ceil(cause.retryAfter / 1000)} s`
      : "rate limited by Discord (429 without Retry-After)"
  }
  return describeError(cause)
}
