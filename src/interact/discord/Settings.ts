/**
 * The Discord interact adapter's settings, and how they are read from
 * configuration.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { headerSecret } from "../../config/Secrets.js"
import { MissingSetting } from "../../config/MissingSetting.js"
import { checkedString, missingSetting, numberOf, textOf } from "../../config/ConfigRange.js"
import { AllowedUsers, ApiUrl, AttachmentBytes, BotToken, CatchUp, ChannelId, DirectMessages } from "../../config/settings/Discord.js"
import { optionWhenUnset } from "../../config/UnsetSetting.js"

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
  /** Messages missed while away that are answered on return, per channel (DISCORD_CATCH_UP). */
  readonly catchUp?: CatchUpBounds | undefined
  /** Largest text attachment read into a message (DISCORD_ATTACHMENT_BYTES); larger ones are only named. */
  readonly attachmentBytes?: number | undefined
}

/** At most the last `messages` messages, none older than `hours`; `messages` 0 turns catch-up off. */
export interface CatchUpBounds {
  readonly messages: number
  readonly hours: number
}

export const defaultCatchUp: CatchUpBounds = { messages: 50, hours: 24 }
/** DISCORD_ATTACHMENT_BYTES unset. */
export const defaultAttachmentBytes = AttachmentBytes.default

const stripPrefix = (token: string): string => token.trim().replace(/^(Bot|Bearer) +/i, "")

const snowflake = /^\d{1,20}$/

/** Discord ids (channels, users) are snowflakes: up to 20 digits. */
export const isDiscordId = (id: string): boolean => snowflake.test(id)

/** Whether `userId` is answered: everyone without DISCORD_ALLOWED_USERS. */
export const isAllowed = (settings: DiscordSettings, userId: string): boolean =>
  Option.isNone(settings.allowedUsers) || settings.allowedUsers.value.includes(userId)

/** A parse's value, or why it is refused: what ConfigRange.checkedString takes (it puts the key's name in front). */
const checked = <A>(parse: (raw: string) => Result.Result<A, string>) => (raw: string): { readonly value: A } | string =>
  Result.match(parse(raw), { onFailure: (message) => message, onSuccess: (value) => ({ value }) })

const parseIds = (name: string, raw: string): Result.Result<ReadonlyArray<string>, string> => {
  const ids = raw.split(",").map((id) => id.trim()).filter((id) => id !== "")
  if (ids.length === 0) return Result.fail(`${name} holds no id`)
  const bad = ids.find((id) => !isDiscordId(id))
  return bad === undefined
    ? Result.succeed(ids)
    : Result.fail(`"${bad}" is not a Discord id (digits only; in Discord, enable Developer Mode and use Copy ID)`)
}

const parseSwitch = (raw: string): Result.Result<boolean, string> => {
  const value = raw.trim().toLowerCase()
  if (["", "0", "false", "no", "off", "n"].includes(value)) return Result.succeed(false)
  if (["1", "true", "yes", "on", "y"].includes(value)) return Result.succeed(true)
  return Result.fail(`"${raw}" is not 1 or 0`)
}

/** `MESSAGES` or `MESSAGES,HOURSh` (`50,24h`); `0` or `off` turns catch-up off. */
const parseCatchUp = (raw: string): Result.Result<CatchUpBounds, string> => {
  const value = raw.trim().toLowerCase()
  if (value === "") return Result.succeed(defaultCatchUp)
  if (value === "0" || value === "off") return Result.succeed({ messages: 0, hours: 0 })
  const match = /^(\d{1,4})(?:\s*,\s*(\d{1,4})\s*h)?$/.exec(value)
  const messages = Number(match?.[1])
  const hours = match?.[2] === undefined ? defaultCatchUp.hours : Number(match[2])
  return match !== null && messages <= 1000 && hours >= 1 && hours <= 720
    ? Result.succeed({ messages, hours })
    : Result.fail(
      `expected MESSAGES or MESSAGES,HOURSh (0 to 1000 messages, 1 to 720 hours, e.g. 50,24h) or off, got ${JSON.stringify(raw)}`
    )
}

const parseApiUrl = (raw: string): Result.Result<string, string> => {
  const url = raw.trim() === "" ? ApiUrl.default : raw.trim()
  const parsed = /^https?:\/\/\S+$/.test(url) && URL.canParse(url) ? new URL(url) : undefined
  // A value that may hold a password is not repeated in the refusal.
  if (parsed === undefined) return Result.fail(url.includes("@") ? "not an http(s) URL" : `"${raw}" is not an http(s) URL`)
  // Credentials or a query would be sent to Discord and shown by `doctor` and the logs: the token has its own setting.
  if (parsed.username !== "" || parsed.password !== "" || parsed.search !== "" || parsed.hash !== "") {
    return Result.fail("expected an http(s) URL without user:password@, query or fragment (the bot token is DISCORD_BOT_TOKEN)")
  }
  // discord.js adds the version itself, so one given here is dropped.
  return Result.succeed(url.replace(/\/+$/, "").replace(/\/v\d+$/, ""))
}

/**
 * DISCORD_BOT_TOKEN (secret; its characters checked here, its presence by
 * `settingsFrom`, which reports a missing one as a MissingSetting),
 * DISCORD_CHANNEL_ID (one id or a comma-separated list; its presence checked
 * by `settingsFrom`, after the token's),
 * DISCORD_ALLOWED_USERS (optional list), DISCORD_DMS
 * (1/0, default 0), DISCORD_API_URL (default https://discord.com/api),
 * DISCORD_CATCH_UP (default 50,24h), DISCORD_ATTACHMENT_BYTES (default 65536). An
 * empty value counts as unset, as config.env writes them.
 */
export const DiscordConfig = Config.all({
  // Checked without the "Bot " prefix `bareToken` drops: the space after it is no fault.
  token: optionWhenUnset(headerSecret(BotToken.key, stripPrefix), BotToken.key),
  // Its absence is reported by `settingsFrom`, after a missing token: the first thing to set is named first.
  channelIds: Config.option(checkedString(ChannelId.key, checked((raw) => parseIds(ChannelId.key, raw)))),
  // Checked before withDefault: the other way round, a bad value is reported without its key.
  allowedUsers: checkedString(
    AllowedUsers.key,
    checked((raw) =>
      raw.trim() === ""
        ? Result.succeed(Option.none<ReadonlyArray<string>>())
        : Result.map(parseIds(AllowedUsers.key, raw), Option.some)
    )
  ).pipe(Config.withDefault(Option.none<ReadonlyArray<string>>())),
  directMessages: textOf(DirectMessages, checked(parseSwitch)),
  apiUrl: textOf(ApiUrl, checked(parseApiUrl)),
  catchUp: textOf(CatchUp, checked(parseCatchUp)),
  attachmentBytes: numberOf(AttachmentBytes)
})

/**
 * The settings, once the configuration is known to hold a token and a
 * channel: without them the adapter cannot start. A missing token is named
 * before a missing channel, the order a new bot's owner sets them in.
 */
export const settingsFrom = (
  config: Config.Success<typeof DiscordConfig>
): Effect.Effect<DiscordSettings, MissingSetting | Config.ConfigError> =>
  Effect.gen(function*() {
    const token = Option.filter(config.token, (token) => Redacted.value(token).trim() !== "")
    if (Option.isNone(token)) {
      return yield* new MissingSetting({
        key: BotToken.key,
        message: "DISCORD_BOT_TOKEN is not set: create a bot at https://discord.com/developers/applications " +
          "(your application → Bot → Reset Token) and set DISCORD_BOT_TOKEN in config.env or the environment"
      })
    }
    if (Option.isNone(config.channelIds)) return yield* Effect.fail(missingSetting(ChannelId.key))
    return { ...config, token: token.value, channelIds: config.channelIds.value }
  })

/** The token as Discord expects it: tokens are often pasted with the "Bot " prefix of the Authorization header. */
export const bareToken = (settings: DiscordSettings): string => stripPrefix(Redacted.value(settings.token))
