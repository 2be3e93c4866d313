/**
 * The agent's own settings, read through the Config module so the entry
 * point decides where values come from (config.env, environment, flags).
 */
import * as Config from "effect/Config"

const positiveInteger = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be a whole number greater than 0`, validation: (n) => n > 0 })
  )

export const AgentConfig = Config.all({
  model: Config.nonEmptyString("PLANCKCLAW_MODEL").pipe(Config.withDefault("claude-haiku-4-5-20251001")),
  maxTokens: positiveInteger("PLANCKCLAW_MAX_TOKENS", 1024),
  historyMax: positiveInteger("HISTORY_MAX", 200),
  historyKeep: Config.integer("HISTORY_KEEP").pipe(
    Config.withDefault(40),
    Config.validate({ message: "HISTORY_KEEP must be a whole number, 0 or more", validation: (n) => n >= 0 })
  ),
  maxToolRounds: positiveInteger("PLANCKCLAW_MAX_TOOL_ROUNDS", 8),
  maxMessageBytes: positiveInteger("PLANCKCLAW_MAX_MESSAGE_BYTES", 64 * 1024),
  compactionChunkChars: positiveInteger("PLANCKCLAW_COMPACTION_CHUNK", 200_000)
}).pipe(
  Config.validate({
    message: "HISTORY_KEEP must be smaller than HISTORY_MAX",
    validation: (config) => config.historyKeep < config.historyMax
  })
)

export type AgentConfig = Config.Config.Success<typeof AgentConfig>
