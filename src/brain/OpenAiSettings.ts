/**
 * The OpenAI-compatible brain's settings: the model, which it must be given;
 * the key, required only for a public base URL; the messages that say which
 * is missing. Apart from the brain's calls (OpenAiBrain.ts), which read
 * them, so each file reads in one sitting; OpenAiBrain re-exports each name.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { MissingSetting } from "../config/MissingSetting.js"
import * as Secrets from "../config/Secrets.js"
import { DebugConfig } from "../runtime/Logging.js"
import { baseUrlConfig, BrainRetryConfig } from "./BrainRetry.js"
import { nonEmptyString, optionWhenUnset } from "../config/UnsetSetting.js"
import { Model, OpenAiApiKey, OpenAiBaseUrl } from "../config/settings/Brain.js"

export const DEFAULT_BASE_URL = OpenAiBaseUrl.default

/**
 * A blank key (as a config.env for a local server may have) counts as none;
 * a key with characters a header cannot carry is refused, naming the key only.
 */
const optionalKey = optionWhenUnset(Secrets.headerSecret(OpenAiApiKey.key), OpenAiApiKey.key)

/**
 * The model to ask for. The agent's default is a Claude model, which no
 * OpenAI-compatible server serves: with this brain it must be set.
 */
export const ModelConfig = optionWhenUnset(nonEmptyString(Model.key), Model.key)

export const missingModel = new MissingSetting({
  key: Model.key,
  message: "PLANCKCLAW_MODEL is not set: the openai brain needs the model its server serves " +
    "(e.g. export PLANCKCLAW_MODEL=\"gpt-4.1-mini\" or \"qwen3:8b\" in config.env); the default is a Claude model."
})

export const OpenAiConfig = Config.all({
  apiKey: optionalKey,
  baseUrl: baseUrlConfig(OpenAiBaseUrl),
  retry: BrainRetryConfig,
  debug: DebugConfig
}).pipe(Config.map(({ retry, ...own }) => ({ ...own, ...retry })))
export type OpenAiConfig = Config.Success<typeof OpenAiConfig>

/**
 * Loopback or private by the URL's host alone (no DNS): 127.0.0.0/8, ::1,
 * localhost, 10/8, 172.16/12, 192.168/16, fc00::/7. Such servers need no key.
 */
export const isLocalHost = (hostname: string): boolean => {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase()
  if (host === "localhost" || host.endsWith(".localhost") || host === "::1") return true
  if (/^f[cd][0-9a-f]{0,2}:/.test(host)) return true
  const octets = /^(\d{1,3})\.(\d{1,3})\.\d{1,3}\.\d{1,3}$/.exec(host)
  if (octets === null) return false
  const [a, b] = [Number(octets[1]), Number(octets[2])]
  return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)
}

/** The base URL as it may appear in a message: no user or password. */
export const shown = (url: URL): string => `${url.origin}${url.pathname}`.replace(/\/+$/, "")

export const missingApiKey = (baseUrl: string) =>
  new MissingSetting({
    key: OpenAiApiKey.key,
    message: `OPENAI_API_KEY is not set: ${shown(new URL(baseUrl))} is not a loopback or private address, so it needs a key; ` +
      "add export OPENAI_API_KEY=\"...\" to config.env or set it in the environment."
  })

/** The key is required only for a public base URL. */
export const requireKey = (config: OpenAiConfig): Effect.Effect<OpenAiConfig, MissingSetting> =>
  Option.isNone(config.apiKey) && !isLocalHost(new URL(config.baseUrl).hostname)
    ? Effect.fail(missingApiKey(config.baseUrl))
    : Effect.succeed(config)
