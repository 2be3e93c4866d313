/**
 * Schedule replies to a Discord channel from `serve` and the cluster: posted
 * over Discord's REST API with the bot's token (DISCORD_BOT_TOKEN,
 * DISCORD_API_URL), whichever runner holds the gateway, in parts of at most
 * 2000 characters, each sent as the bridge sends its replies (ChannelPost):
 * no pings, whatever the model wrote (@everyone), and a nonce Discord
 * enforces, so a part Discord stored but answered late (5xx, timeout), which
 * the client sends again, is one message. The nonces are drawn per reply:
 * an occurrence is recorded before it fires and its reply is never sent
 * again (docs/schedules.md), so only that retry needs them. discord.js is
 * loaded at the first such reply only.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { InteractError } from "../../ports/Interact.js"
import { channelPostBody, newNonce, nonceFor } from "../../interact/discord/ChannelPost.js"
import { bareToken, DiscordConfig, settingsFrom } from "../../interact/discord/Settings.js"
import { chunkReply } from "../../interact/discord/ReplyChunks.js"

export type PostToChannel = (channel: string, text: string) => Effect.Effect<void, InteractError>

/** How replies reach a channel; none without a bot token (or with unusable Discord settings). */
export const make: Effect.Effect<PostToChannel | undefined, never, Scope.Scope> = Effect.gen(function*() {
  const config = yield* Effect.option(DiscordConfig)
  if (Option.isNone(config) || Option.isNone(config.value.token)) return undefined
  const settings = yield* Effect.option(settingsFrom({ ...config.value, channelIds: Option.some(Option.getOrElse(config.value.channelIds, () => [])) }))
  if (Option.isNone(settings)) return undefined
  const scope = yield* Effect.scope
  // One client, made at the first reply, closed with the host.
  const client = yield* Effect.cached(
    Effect.flatMap(Effect.promise(() => import("../../interact/discord/DiscordRest.js")), (rest) =>
      Scope.provide(scope)(rest.make(settings.value.apiUrl, bareToken(settings.value))))
  )
  return (channel, text) =>
    Effect.gen(function*() {
      const rest = yield* client
      const reply = yield* newNonce
      yield* Effect.forEach(chunkReply(text), (content, index) =>
        rest.post(`/channels/${channel}/messages`, channelPostBody({ content, nonce: nonceFor(reply, index) })), { discard: true })
    }).pipe(
      Effect.mapError((error) => new InteractError({ message: `Discord refused the reply: ${error instanceof Error ? error.message : String(error)}`, cause: error }))
    )
})
