/** The brain: which one thinks, how it is reached, and what a turn asks of it. */
import type { NumberSetting, SwitchSetting, TextSetting } from "../Setting.js"

const baseUrl = "http(s) URL without user:password@, ? or #"

export const BrainChoice = {
  key: "PLANCKCLAW_BRAIN",
  kind: "text",
  accepts: "anthropic, openai, none or an executable",
  default: "anthropic",
  description: "the brain (--brain overrides it); an executable's path is taken from the home in config.env",
  details: "see [Brains](brains.md)"
} as const satisfies TextSetting

export const AnthropicApiKey = {
  key: "ANTHROPIC_API_KEY",
  kind: "text",
  accepts: "header-safe text",
  defaultText: "(required for the anthropic brain)",
  description: "API key; never logged, never passed to claws",
  secret: true,
  exampleSet: true
} as const satisfies TextSetting

export const AnthropicBaseUrl = {
  key: "ANTHROPIC_BASE_URL",
  kind: "text",
  accepts: baseUrl,
  default: "https://api.anthropic.com",
  description: "any Anthropic-compatible server"
} as const satisfies TextSetting

export const OpenAiBaseUrl = {
  key: "OPENAI_BASE_URL",
  kind: "text",
  accepts: baseUrl,
  default: "https://api.openai.com/v1",
  description: "any Chat Completions server (OpenRouter, Ollama, llama.cpp, vLLM, LM Studio)"
} as const satisfies TextSetting

export const OpenAiApiKey = {
  key: "OPENAI_API_KEY",
  kind: "text",
  accepts: "header-safe text",
  defaultText: "(required for the openai brain unless its host is loopback or private)",
  description: "Bearer token; never logged, never passed to claws",
  secret: true
} as const satisfies TextSetting

export const Model = {
  key: "PLANCKCLAW_MODEL",
  kind: "text",
  accepts: "non-empty",
  default: "claude-haiku-4-5-20251001",
  description: "model for turns and compaction (--model overrides it); required with the openai brain (the default is a Claude model)",
  perAgent: true
} as const satisfies TextSetting

export const MaxTokens = {
  key: "PLANCKCLAW_MAX_TOKENS",
  kind: "integer",
  min: 1,
  max: 1_000_000,
  default: 1024,
  description: "max_tokens of a turn (compaction uses 2048)",
  details: "sent as `max_completion_tokens` where an openai server wants it",
  perAgent: true
} as const satisfies NumberSetting

export const BrainTimeout = {
  key: "PLANCKCLAW_BRAIN_TIMEOUT",
  kind: "seconds",
  min: 0.1,
  max: 3600,
  default: 60,
  description: "seconds an HTTP attempt may wait for (more of) the answer before it is abandoned and retried; keep-alives do not count"
} as const satisfies NumberSetting

export const BrainRetries = {
  key: "PLANCKCLAW_BRAIN_RETRIES",
  kind: "integer",
  min: 0,
  max: 100,
  default: 4,
  description: "retries after the first attempt (dropped connections, timeouts, 408/429/5xx; a refused connection or unknown host too, but not in run, which says it at once)"
} as const satisfies NumberSetting

export const PromptCache = {
  key: "PLANCKCLAW_PROMPT_CACHE",
  kind: "switch",
  default: true,
  description: "prompt-caching breakpoints and the anchored history window"
} as const satisfies SwitchSetting

export const Prices = {
  key: "PLANCKCLAW_PRICES",
  kind: "text",
  accepts: "path to a JSON price table",
  defaultText: "(built-in table)",
  description: "prices for planckclaw usage, added over the built-in table",
  path: true
} as const satisfies TextSetting

export const group = {
  title: "Brain",
  settings: [
    BrainChoice,
    AnthropicApiKey,
    AnthropicBaseUrl,
    OpenAiBaseUrl,
    OpenAiApiKey,
    Model,
    MaxTokens,
    BrainTimeout,
    BrainRetries,
    PromptCache,
    Prices
  ]
} as const
