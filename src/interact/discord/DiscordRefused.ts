/**
 * Discord refused to let the bot in, for a reason starting again without a
 * change of settings cannot fix (`token`; `intent`; `gateway`: shard
 * settings, API version, or sharding required), or could not be reached at
 * all (`unreachable`). Kept apart from discord.js so the entry point can
 * name it without loading the library.
 */
import * as Data from "effect/Data"

export class DiscordRefused extends Data.TaggedError("DiscordRefused")<{
  readonly reason: "token" | "intent" | "gateway" | "unreachable"
  /** One line for the user: what Discord said and what to do. */
  readonly message: string
}> {}
