/**
 * The agent's own settings, read through the Config module so the entry
 * point decides where values come from (config.env, environment, flags).
 * Each number's range is enforced at start-up (see ConfigRange).
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { numberOf, switchOf, validated } from "./ConfigRange.js"
import { MaxMessageBytes, MaxToolRounds } from "./settings/Agent.js"
import { MaxTokens, Model, PromptCache } from "./settings/Brain.js"
import { CompactionChunk, HistoryKeep, HistoryMax } from "./settings/Memory.js"

export const AgentConfig = validated(Config.all({
  model: Config.NonEmptyString(Model.key).pipe(Config.withDefault(Model.default)),
  maxTokens: numberOf(MaxTokens),
  // Only the compaction threshold: a large value lets history grow, nothing more is sent per turn.
  historyMax: numberOf(HistoryMax),
  // The window sent with every turn.
  historyKeep: numberOf(HistoryKeep),
  maxToolRounds: numberOf(MaxToolRounds),
  maxMessageBytes: numberOf(MaxMessageBytes),
  compactionChunkChars: numberOf(CompactionChunk),
  // Prompt-caching breakpoints in every turn request, and the anchored history window (see CacheWindow).
  promptCache: switchOf(PromptCache)
}), `${HistoryKeep.key} must be smaller than ${HistoryMax.key}`, (config) => config.historyKeep < config.historyMax)

export type AgentConfig = Config.Success<typeof AgentConfig>

/**
 * The agent's settings as its host already parsed them (serve's host, once
 * for every agent without a config.env of its own); undefined: none given.
 * A parse costs about 50 µs, and an agent and its compactor each read the
 * settings at every agent's start.
 */
export const ParsedAgentConfig = Context.Reference<AgentConfig | undefined>("planckclaw/config/ParsedAgentConfig", {
  defaultValue: () => undefined
})

/** The agent's settings: as its host parsed them (ParsedAgentConfig), else parsed from the settings in context. */
export const agentConfig: Effect.Effect<AgentConfig, Config.ConfigError> = Effect.flatMap(
  Effect.service(ParsedAgentConfig),
  (parsed) => parsed === undefined ? AgentConfig : Effect.succeed(parsed)
)
