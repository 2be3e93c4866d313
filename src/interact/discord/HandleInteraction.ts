/**
 * An INTERACTION_CREATE (a slash command): refused ephemerally outside the
 * adapter's channels or for someone not allowed, else acknowledged at once
 * and handed on like a message, its reply to follow up the interaction.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as ChannelKinds from "./ChannelKinds.js"
import type { DiscordRest } from "./DiscordRest.js"
import type { DiscordMessage } from "./DiscordBridge.js"
import { type DiscordSettings, isAllowed } from "./Settings.js"
import * as SlashCommands from "./SlashCommands.js"

export interface InteractionDeps {
  readonly rest: DiscordRest
  readonly settings: DiscordSettings
  readonly kinds: ChannelKinds.ChannelKinds
  /** True the first time an id is seen: a repeated interaction is answered once. */
  readonly fresh: (id: string) => Effect.Effect<boolean>
  readonly deliver: (message: DiscordMessage) => Effect.Effect<void>
}

/**
 * Discord drops an interaction not answered within three seconds: a channel
 * Discord is slow to describe gets the "try again" refusal within two.
 */
const lookupDeadline = Duration.seconds(2)

export const handleInteraction = ({ deliver, fresh, kinds, rest, settings }: InteractionDeps) => (raw: unknown) =>
  Effect.gen(function*() {
    const decoded = SlashCommands.decodeInteraction(raw)
    if (Result.isFailure(decoded)) return yield* Effect.logDebug("Ignored an INTERACTION_CREATE that does not decode")
    const interaction = decoded.success
    const text = SlashCommands.commandText(interaction)
    const asker = SlashCommands.askedBy(interaction)
    const channelId = interaction.channel_id ?? interaction.channel?.id
    if (text === undefined || asker === undefined || channelId === undefined) return
    const kind = yield* kinds.of({ channelId, guildId: interaction.guild_id, channelType: interaction.channel?.type }).pipe(
      Effect.timeoutOrElse({
        duration: lookupDeadline,
        orElse: () =>
          Effect.fail(new ChannelKinds.ChannelLookupFailed({ channelId, message: `no answer within ${Duration.format(lookupDeadline)}`, retryAfter: 0 }))
      }),
      Effect.catchTag("ChannelLookupFailed", (failed) =>
        Effect.as(Effect.logWarning(`Discord channel ${channelId} could not be looked up (${failed.message})`), "unchecked" as const))
    )
    if (kind === "unchecked") {
      return yield* SlashCommands.refuseEphemerally(rest, interaction, "I could not check this channel just now; please try again.")
    }
    if (kind === undefined || !isAllowed(settings, asker.id)) {
      return yield* SlashCommands.refuseEphemerally(
        rest,
        interaction,
        kind === undefined ? "I do not answer in this channel." : "Sorry, I only answer the people I was set up for."
      )
    }
    if (!(yield* fresh(interaction.id))) return
    const acknowledged = yield* SlashCommands.deferReply(rest, interaction).pipe(Effect.result)
    if (Result.isFailure(acknowledged)) {
      return yield* Effect.logWarning(`Discord /${interaction.data?.name} not acknowledged (${acknowledged.failure}); not answered`)
    }
    yield* deliver({
      channel: channelId,
      kind,
      guildId: interaction.guild_id,
      authorId: asker.id,
      authorName: asker.name,
      text,
      target: {
        _tag: "Interaction",
        applicationId: interaction.application_id,
        interactionId: interaction.id,
        token: interaction.token
      }
    })
  })
