/**
 * A message posted in a channel by the bot, as every poster of the bridge
 * sends it (its replies, and the schedule's from `serve` and the cluster):
 * no pings, and a nonce Discord enforces, so a part sent again after a lost
 * answer is one message. Free of discord.js, for callers that load it late.
 */
import { createHash, randomBytes } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** No pings: a reply quotes what the model wrote, and must not mention @everyone on its behalf. */
export const noMentions = { parse: [] }

/**
 * The nonce of part `index` of the reply `key` names: the same whoever sends
 * it, so a reply handed over twice (a gateway holder that died after posting,
 * before noting it posted) is one message while Discord remembers the nonce
 * (minutes). 24 characters; Discord allows 25.
 */
export const nonceFor = (key: string, index: number): string =>
  createHash("sha256").update(key).digest("hex").slice(0, 20) + index.toString(16).padStart(4, "0")

/** A nonce of its own, for a part no key names. */
export const newNonce = Effect.sync(() => randomBytes(12).toString("hex"))

/** The body of POST /channels/{id}/messages for one part; `reference`: the message it replies to. */
export const channelPostBody = (
  part: { readonly content: string; readonly nonce: string },
  reference: Option.Option<string> = Option.none()
) => ({
  content: part.content,
  nonce: part.nonce,
  enforce_nonce: true,
  allowed_mentions: noMentions,
  ...Option.match(reference, {
    onNone: () => ({}),
    onSome: (id) => ({ message_reference: { message_id: id, fail_if_not_exists: false } })
  })
})
