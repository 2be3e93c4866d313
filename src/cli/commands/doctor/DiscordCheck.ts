/**
 * Doctor's Discord lines, when DISCORD_BOT_TOKEN is set: the settings
 * parse, Discord accepts the token (`GET /v10/users/@me`), the application
 * has the Message Content intent switched on (`GET /v10/applications/@me`,
 * its flags), and the bot can see each configured channel.
 */
import type * as HttpClient from "effect/http/HttpClient"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ConfigErrors from "../../../config/ConfigErrors.js"
import { BotToken } from "../../../config/settings/Discord.js"
import { bareToken, DiscordConfig, type DiscordSettings, settingsFrom } from "../../../interact/discord/Settings.js"
import { isJsonObject } from "../../../runtime/Json.js"
import { fail, type Finding, pass, skip } from "./DoctorCheck.js"
import * as HttpProbe from "./HttpProbe.js"

/** Application flags: the Message Content intent, for bots in 100 servers or more and for the others. */
export const GatewayMessageContent = 1 << 18
export const GatewayMessageContentLimited = 1 << 19

const portal = "https://discord.com/developers/applications"

/** A server category (channel type 4): it groups channels, and holds no messages of its own. */
const categoryType = 4

const unreachable = (subject: string, shown: string, result: Exclude<HttpProbe.ProbeResult, { _tag: "Answered" }>) =>
  fail(
    subject,
    result._tag === "NoAnswer" ? `no answer from ${shown} within ${HttpProbe.seconds}` : `cannot reach ${shown}: ${result.detail}`,
    "check the network (and DISCORD_API_URL if you set it)"
  )

const field = (body: string, name: string): unknown => {
  const parsed = HttpProbe.json(body)
  return isJsonObject(parsed) ? parsed[name] : undefined
}

const withSettings = (settings: DiscordSettings): Effect.Effect<ReadonlyArray<Finding>, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const secret = bareToken(settings)
    const headers = { authorization: `Bot ${secret}` }
    const shown = HttpProbe.shownUrl(settings.apiUrl)
    const get = (route: string) => HttpProbe.get(`${settings.apiUrl}/v10${route}`, headers)

    const me = yield* get("/users/@me")
    if (me._tag !== "Answered") return [unreachable("discord", shown, me)]
    if (me.status === 401 || me.status === 403) {
      return [
        fail("discord", `Discord rejected DISCORD_BOT_TOKEN (${me.status})`, `reset the token (${portal} → your application → Bot → Reset Token) and set DISCORD_BOT_TOKEN`),
        skip("discord intents", "not checked: the token was rejected")
      ]
    }
    if (me.status !== 200) {
      return [fail("discord", `${shown} answered ${me.status}: ${HttpProbe.apiWords(me.body, (text) => HttpProbe.scrub(text, secret))}`, "try again later")]
    }
    const name = field(me.body, "username")
    const token = pass("discord", `DISCORD_BOT_TOKEN accepted${typeof name === "string" ? ` (bot ${name})` : ""}`)

    const application = yield* get("/applications/@me")
    const intents = application._tag !== "Answered"
      ? unreachable("discord intents", shown, application)
      : application.status !== 200
      ? fail("discord intents", `${shown} answered ${application.status} for the application`, "try again later")
      : ((Number(field(application.body, "flags")) | 0) & (GatewayMessageContent | GatewayMessageContentLimited)) !== 0
      ? pass("discord intents", "Message Content intent enabled")
      : fail(
        "discord intents",
        "the Message Content intent is off: Discord would refuse the login (close 4014)",
        `${portal} → your application → Bot → Privileged Gateway Intents → switch on Message Content Intent`
      )

    const channels = yield* Effect.forEach(settings.channelIds, (id) =>
      Effect.map(get(`/channels/${id}`), (result): Finding => {
        if (result._tag !== "Answered") return unreachable(`discord channel ${id}`, shown, result)
        if (result.status === 200) {
          const channelName = field(result.body, "name")
          const named = typeof channelName === "string" ? `#${channelName} ` : ""
          return field(result.body, "type") === categoryType
            ? fail(
              `discord channel ${id}`,
              `${named}is a category, which holds no messages`,
              "give the ids of the channels in it instead (right-click each channel → Copy Channel ID)"
            )
            : pass(`discord channel ${id}`, `${named}visible to the bot`)
        }
        // Only 403 and 404 are about the bot's access; a 5xx or a 429 is Discord failing, not a reason to re-invite.
        if (result.status !== 403 && result.status !== 404) {
          return fail(
            `discord channel ${id}`,
            `${shown} answered ${result.status}: ${HttpProbe.apiWords(result.body, (text) => HttpProbe.scrub(text, secret))}`,
            "try again later"
          )
        }
        return fail(
          `discord channel ${id}`,
          `the bot cannot see this channel (${result.status})`,
          "invite the bot to its server and give it View Channel there, or fix DISCORD_CHANNEL_ID"
        )
      }))
    return [token, intents, ...channels]
  })

export const check: Effect.Effect<ReadonlyArray<Finding>, never, HttpClient.HttpClient> = Effect.gen(function*() {
  const token = yield* Config.option(Config.Redacted(BotToken.key))
  if (Option.isNone(token)) return [skip("discord", "not configured (DISCORD_BOT_TOKEN is not set)")]
  const settings = yield* Effect.flatMap(DiscordConfig, settingsFrom)
  return yield* withSettings(settings)
}).pipe(
  Effect.catchTags({
    ConfigError: (error) =>
      Effect.succeed([
        fail("discord", ConfigErrors.describe(error).replace(/^configuration error: /, ""), "fix that setting in config.env or the environment")
      ]),
    MissingSetting: (error) => Effect.succeed([fail("discord", error.message)])
  })
)
