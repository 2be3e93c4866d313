/**
 * The agent's own settings, read through the Config module so the entry
 * point decides where values come from (config.env, environment, flags).
 * Each number's range is enforced at start-up (see ConfigRange).
 */
import * as Config from "effect/Config"
import { integerIn, onOff, validated } from "./ConfigRange.js"

export const AgentConfig = validated(Config.all({
  model: Config.NonEmptyString("PLANCKCLAW_MODEL").pipe(Config.withDefault("claude-haiku-4-5-20251001")),
  maxTokens: integerIn("PLANCKCLAW_MAX_TOKENS", { min: 1, max: 1_000_000 }, 1024),
  // Only the compaction threshold: a large value lets history grow, nothing more is sent per turn.
  historyMax: integerIn("HISTORY_MAX", { min: 1, max: 1_000_000_000 }, 200),
  // The window sent with every turn.
  historyKeep: integerIn("HISTORY_KEEP", { min: 0, max: 100_000 }, 40),
  maxToolRounds: integerIn("PLANCKCLAW_MAX_TOOL_ROUNDS", { min: 1, max: 100 }, 8),
  // An interact line is at most 1 MiB (Wire.defaultMaxLineBytes): a larger limit could never apply.
  maxMessageBytes: integerIn("PLANCKCLAW_MAX_MESSAGE_BYTES", { min: 1, max: 1024 * 1024 }, 64 * 1024),
  compactionChunkChars: integerIn("PLANCKCLAW_COMPACTION_CHUNK", { min: 1, max: 10_000_000 }, 200_000),
  // Prompt-caching breakpoints in every turn request, and the anchored history window (see CacheWindow).
  promptCache: onOff("PLANCKCLAW_PROMPT_CACHE", true)
}), "HISTORY_KEEP must be smaller than HISTORY_MAX", (config) => config.historyKeep < config.historyMax)

export type AgentConfig = Config.Success<typeof AgentConfig>
