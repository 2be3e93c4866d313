/**
 * Slash commands: `/ask text`, `/compact`, `/usage` and `/forget [confirm]`,
 * registered for the guilds of the configured channels, and what an
 * INTERACTION_CREATE for one of them means: the text the agent gets, who
 * asked, where, and how to answer (the interaction's id and token). The
 * interaction is acknowledged at once with a deferred response, so a slow
 * brain never times it out; the reply follows up later (Replies).
 */
import { Routes } from "discord.js"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { DiscordRest } from "./DiscordRest.js"
import { describeRestError, isPermanent } from "./Refusals.js"
import { nullable, nullableOr } from "./Nullable.js"

const stringOption = 3
const booleanOption = 5

/** The commands as PUT /applications/{app}/guilds/{guild}/commands takes them. */
export const commandDefinitions = [
  {
    name: "ask",
    type: 1,
    description: "Ask the agent something",
    options: [{ type: stringOption, name: "text", description: "Your message", required: true }]
  },
  { name: "compact", type: 1, description: "Fold the agent's older history into its summary now" },
  { name: "usage", type: 1, description: "Tokens and cost the agent has used" },
  {
    name: "forget",
    type: 1,
    description: "Archive the agent's history and summary and start afresh (asks first)",
    options: [{ type: booleanOption, name: "confirm", description: "True to forget without being asked", required: false }]
  }
] as const

const User = Schema.Struct({
  id: Schema.String,
  username: nullableOr(Schema.String, ""),
  global_name: nullable(Schema.String)
})

export const Interaction = Schema.Struct({
  id: Schema.String,
  application_id: Schema.String,
  type: Schema.Number,
  token: Schema.String,
  channel_id: nullable(Schema.String),
  channel: nullable(Schema.Struct({ id: Schema.String, type: Schema.Number })),
  guild_id: nullable(Schema.String),
  member: nullable(Schema.Struct({ nick: nullable(Schema.String), user: User })),
  user: nullable(User),
  data: nullable(Schema.Struct({
      name: Schema.String,
      options: nullableOr(Schema.Array(Schema.Struct({ name: Schema.String, value: Schema.optional(Schema.Unknown) })), [])
    }))
})
export type Interaction = typeof Interaction.Type

export const decodeInteraction = Schema.decodeUnknownResult(Interaction)

const applicationCommand = 2

/** The text the agent gets for a command, or undefined for what is not one of ours. */
export const commandText = (interaction: Interaction): string | undefined => {
  if (interaction.type !== applicationCommand || interaction.data === undefined) return undefined
  const option = (name: string) => interaction.data?.options.find((o) => o.name === name)?.value
  switch (interaction.data.name) {
    case "ask": {
      const text = option("text")
      return typeof text === "string" && text.trim() !== "" ? text : undefined
    }
    case "compact":
      return "/compact"
    case "usage":
      return "/usage"
    case "forget":
      return option("confirm") === true ? "/forget confirm" : "/forget"
    default:
      return undefined
  }
}

/** Who asked, as the member list shows them. */
export const askedBy = (interaction: Interaction) => {
  const user = interaction.member?.user ?? interaction.user
  return user === undefined
    ? undefined
    : { id: user.id, name: interaction.member?.nick ?? user.global_name ?? user.username }
}

const deferredChannelMessage = 5
const channelMessage = 4
const ephemeral = 64

/** Acknowledges at once: Discord shows "thinking…" until the follow-up. */
export const deferReply = (rest: DiscordRest, interaction: Interaction) =>
  rest.post(Routes.interactionCallback(interaction.id, interaction.token), { type: deferredChannelMessage }, false).pipe(
    Effect.mapError(describeRestError)
  )

/** Answers at once, visible to the asker only. */
export const refuseEphemerally = (rest: DiscordRest, interaction: Interaction, content: string) =>
  rest.post(
    Routes.interactionCallback(interaction.id, interaction.token),
    { type: channelMessage, data: { content, flags: ephemeral } },
    false
  ).pipe(
    Effect.mapError(describeRestError),
    Effect.catch((why) => Effect.logWarning(`Discord interaction ${interaction.id} could not be refused: ${why}`))
  )

/**
 * Registers the commands in a guild. Discord's refusal (a 4xx: a bot invited
 * without the applications.commands scope) is told with what to do, and is
 * final; a failure of Discord's (5xx, 429, network) is the error, to try
 * again later.
 */
export const registerCommands = (rest: DiscordRest, applicationId: string, guildId: string): Effect.Effect<void, unknown> =>
  rest.put(Routes.applicationGuildCommands(applicationId, guildId), commandDefinitions).pipe(
    Effect.andThen(Effect.logDebug(`Discord slash commands registered in server ${guildId}`)),
    Effect.catchIf(isPermanent, (cause) =>
      Effect.logWarning(
        `Discord slash commands could not be registered in server ${guildId} (${describeRestError(cause)}); ` +
          "re-invite the bot with the applications.commands scope to use /ask, /compact, /usage and /forget"
      ))
  )
