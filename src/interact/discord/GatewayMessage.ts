/**
 * A message as MESSAGE_CREATE and GET /channels/{id}/messages describe it,
 * decoded with Schema: one that does not decode is ignored, never thrown.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { Attachment } from "./Attachments.js"
import { nullable, nullableOr } from "./Nullable.js"

export const GatewayMessage = Schema.Struct({
  id: Schema.String,
  channel_id: Schema.String,
  guild_id: nullable(Schema.String),
  channel_type: nullable(Schema.Number),
  webhook_id: nullable(Schema.String),
  type: nullable(Schema.Number),
  content: nullableOr(Schema.String, ""),
  author: Schema.Struct({
    id: Schema.String,
    username: nullableOr(Schema.String, ""),
    global_name: nullable(Schema.String),
    bot: nullableOr(Schema.Boolean, false)
  }),
  member: nullable(Schema.Struct({ nick: nullable(Schema.String) })),
  attachments: nullableOr(Schema.Array(Attachment), []),
  // A forward: no content of its own, the forwarded message's text and files in a snapshot (see forwardedIn).
  message_snapshots: nullableOr(Schema.Array(Schema.Unknown), [])
})
export type GatewayMessage = typeof GatewayMessage.Type

export const decodeMessage = Schema.decodeUnknownResult(GatewayMessage)

const Snapshot = Schema.Struct({
  message: Schema.Struct({
    content: nullableOr(Schema.String, ""),
    attachments: nullableOr(Schema.Array(Attachment), [])
  })
})
const decodeSnapshot = Schema.decodeUnknownResult(Snapshot)

/**
 * The messages a forward carries that have text or files. Each snapshot is decoded on its own: one of
 * a shape Discord may add later is left out, and never costs the message it came in.
 */
export const forwardedIn = (message: GatewayMessage) =>
  message.message_snapshots.flatMap((raw) =>
    Result.match(decodeSnapshot(raw), {
      onFailure: () => [],
      onSuccess: ({ message: forwarded }) =>
        forwarded.content.trim() !== "" || forwarded.attachments.length > 0 ? [forwarded] : []
    })
  )
