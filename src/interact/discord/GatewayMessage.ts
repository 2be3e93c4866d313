/**
 * A message as MESSAGE_CREATE and GET /channels/{id}/messages describe it,
 * decoded with Schema: one that does not decode is ignored, never thrown.
 */
import * as Schema from "effect/Schema"
import { Attachment } from "./Attachments.js"

export const GatewayMessage = Schema.Struct({
  id: Schema.String,
  channel_id: Schema.String,
  guild_id: Schema.optionalWith(Schema.String, { nullable: true }),
  channel_type: Schema.optionalWith(Schema.Number, { nullable: true }),
  webhook_id: Schema.optionalWith(Schema.String, { nullable: true }),
  type: Schema.optionalWith(Schema.Number, { nullable: true }),
  content: Schema.optionalWith(Schema.String, { nullable: true, default: () => "" }),
  author: Schema.Struct({
    id: Schema.String,
    username: Schema.optionalWith(Schema.String, { nullable: true, default: () => "" }),
    global_name: Schema.optionalWith(Schema.String, { nullable: true }),
    bot: Schema.optionalWith(Schema.Boolean, { nullable: true, default: () => false })
  }),
  member: Schema.optionalWith(Schema.Struct({ nick: Schema.optionalWith(Schema.String, { nullable: true }) }), {
    nullable: true
  }),
  attachments: Schema.optionalWith(Schema.Array(Attachment), { nullable: true, default: () => [] })
})
export type GatewayMessage = typeof GatewayMessage.Type

export const decodeMessage = Schema.decodeUnknownResult(GatewayMessage)
