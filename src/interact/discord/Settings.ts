/**
 * The Discord interact adapter's settings, and how they are read from
 * configuration.
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { headerSecret } from "../../config/Secrets.js"
import { MissingSetting } from "../../config/MissingSetting.js"

export interface DiscordSettings {
  readonly token: Redacted.Redacted<string>
  /** Channels whose messages are answered. */
  readonly channelIds: ReadonlyArray<string>
  /** When set, only these users are answered. */
  readonly allowedUsers: Option.Option<ReadonlyArray<string>>
  /** Answer direct messages (from allowed users). */
  readonly directMessages: boolean
  /** REST base, without the version: discord.js adds /v10. */
  readonly apiUrl: string
}

const stripPrefix = (token: string): string => token.trim().replace(/^(Bot|Bearer) +/i, "")

const snowflake = /^\d{1,20}$/

/** Discord ids (channels, users) are snowflakes: up to 20 digits. */
export const isDiscordId = (id: string): boolean => snowflake.test(id)

const parseIds = (name: string, raw: string): Either.Either<ReadonlyArray<string>, ConfigError.ConfigError> => {
  const ids = raw.split(",").map((id) => id.trim()).filter((id) => id !== "")
  // Config.mapOrFail puts the key's name in front of the path.
  if (ids.length === 0) return Either.left(ConfigError.InvalidData([], `${name} holds no id`))
  const bad = ids.find((id) => !isDiscordId(id))
  return bad === undefined
    ? Either.right(ids)
    : Either.left(ConfigError.InvalidData(
      [],
      `"${bad}" is not a Discord id (digits only; in Discord, enable Developer Mode and use Copy ID)`
    ))
}

const parseSwitch = (raw: string): Either.Either<boolean, ConfigError.ConfigError> => {
  const value = raw.trim().toLowerCase()
  if (["", "0", "false", "no", "off", "n"].includes(value)) return Either.right(false)
  if (["1", "true", "yes", "on", "y"].includes(value)) return Either.right(true)
  return Either.left(ConfigError.InvalidData([], `"${raw}" is not 1 or 0`))
}

const parseApiUrl = (raw: string): Either.Either<string, ConfigError.ConfigError> => {
  const url = raw.trim() === "" ? "https://discord.com/api" : raw.trim()
  // discord.js adds the version itself, so one given here is dropped.
  return /^https?:\/\/\S+$/.test(url)
    ? Either.right(url.replace(/\/+$/, "").replace(/\/v\d+$/, ""))
    : Either.left(ConfigError.InvalidData([], `"${raw}" is not an http(s) URL`))
}

/**
 * DISCORD_BOT_TOKEN (secret; its characters checked here, its presence by
 * `settingsFrom`, which reports a missing one as a MissingSetting),
 * DISCORD_CHANNEL_ID (one id or a comma-separated list),
 * DISCORD_ALLOWED_USERS (optional list), DISCORD_DMS
 * (1/0, default 0), DISCORD_API_URL (default https://discord.com/api). An
 * empty value counts as unset, as config.env writes them.
 */
export const DiscordConfig = Config.all({
  // Checked without the "Bot " prefix `bareToken` drops: the space after it is no fault.
  token: Config.option(headerSecret("DISCORD_BOT_TOKEN", stripPrefix)),
  channelIds: Config.string("DISCORD_CHANNEL_ID").pipe(
    Config.mapOrFail((raw) => parseIds("DISCORD_CHANNEL_ID", raw))
  ),
  allowedUsers: Config.string("DISCORD_ALLOWED_USERS").pipe(
    Config.withDefault(""),
    Config.mapOrFail((raw) =>
      raw.trim() === "" ? Either.right(Option.none()) : Either.map(parseIds("DISCORD_ALLOWED_USERS", raw), Option.some)
    )
  ),
  directMessages: Config.string("DISCORD_DMS").pipe(Config.withDefault(""), Config.mapOrFail(parseSwitch)),
  apiUrl: Config.string("DISCORD_API_URL").pipe(Config.withDefault(""), Config.mapOrFail(parseApiUrl))
})

/** The settings, once the configuration is known to hold a token: without one the adapter cannot start. */
export const settingsFrom = (
  config: Config.Config.Success<typeof DiscordConfig>
): Effect.Effect<DiscordSettings, MissingSetting> =>
  Effect.gen(function*() {
    const token = Option.filter(config.token, (token) => Redacted.value(token).trim() !== "")
    if (Option.isNone(token)) {
      return yield* new MissingSetting({
        key: "DISCORD_BOT_TOKEN",
        message: "DISCORD_BOT_TOKEN is not set: create a bot at https://discord.com/developers/applications " +
          "(your application → Bot → Reset Token) and set DISCORD_BOT_TOKEN in config.env or the environment"
      })
    }
    return { ...config, token: token.value }
  })

/** The token as Discord expects it: tokens are often pasted with the "Bot " prefix of the Authorization header. */
export const bareToken = (settings: DiscordSettings): string => stripPrefix(Redacted.value(settings.token))
