/** The Discord bridge: `run --bridge discord`, and `serve --bridge discord`. */
import type { ChoiceSetting, NumberSetting, TextSetting } from "../Setting.js"

const ids = "ids, comma-separated"

export const BotToken = {
  key: "DISCORD_BOT_TOKEN",
  kind: "text",
  accepts: "header-safe text",
  defaultText: "(required)",
  description: "the bot token; never logged, never passed to claws",
  secret: true
} as const satisfies TextSetting

export const ChannelId = {
  key: "DISCORD_CHANNEL_ID",
  kind: "text",
  accepts: ids,
  defaultText: "(required)",
  description: "channels to answer in: one id or a comma-separated list"
} as const satisfies TextSetting

export const AllowedUsers = {
  key: "DISCORD_ALLOWED_USERS",
  kind: "text",
  accepts: ids,
  defaultText: "(everyone)",
  description: "only these users are answered"
} as const satisfies TextSetting

export const DirectMessages = {
  key: "DISCORD_DMS",
  kind: "text",
  accepts: "0, 1",
  default: "0",
  description: "1: answer direct messages (from allowed users)"
} as const satisfies TextSetting

export const ApiUrl = {
  key: "DISCORD_API_URL",
  kind: "text",
  accepts: "http(s) URL, no credentials or query",
  default: "https://discord.com/api",
  description: "REST base; the gateway URL is learned from it"
} as const satisfies TextSetting

export const CatchUp = {
  key: "DISCORD_CATCH_UP",
  kind: "text",
  accepts: "N, N,Hh or off",
  default: "50,24h",
  description: "after a restart or a new session, answer at most the last N missed messages per channel, none older than H hours",
  details: "N from 0 to 1000, H from 1 to 720"
} as const satisfies TextSetting

export const AttachmentBytes = {
  key: "DISCORD_ATTACHMENT_BYTES",
  kind: "integer",
  min: 0,
  max: 8 * 1024 * 1024,
  default: 64 * 1024,
  description: "largest text attachment added to a message; larger or non-text ones are only named"
} as const satisfies NumberSetting

export const AgentPer = {
  key: "DISCORD_AGENT_PER",
  kind: "choice",
  choices: ["channel", "user", "server", "one"],
  default: "channel",
  description: "serve --bridge discord: which agent answers a message (direct messages: always the sender's own)",
  details: "see [Discord in `serve`](serve.md#discord-in-serve)"
} as const satisfies ChoiceSetting

export const group = {
  title: "Discord (run --bridge discord)",
  settings: [BotToken, ChannelId, AllowedUsers, DirectMessages, ApiUrl, CatchUp, AttachmentBytes, AgentPer]
} as const
