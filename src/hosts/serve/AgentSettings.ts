/**
 * Where one agent's settings come from: its own `config.env` (only the model
 * and the turn settings), then the host's settings. PLANCKCLAW_DIR is the
 * agent's directory, whatever the host has. (The soul is the agent's
 * `soul.md`, or else the host's default soul, PLANCKCLAW_DIR/soul.md of the
 * host, or else the built-in persona: Memory's `fallbackSoul`, given by
 * AgentInstance.ts.) Most agents have no config.env: they share the host's
 * settings, parsed once.
 */
import * as path from "node:path"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import { AgentConfig } from "../../config/AgentConfig.js"
import * as ConfigFile from "../../config/ConfigFile.js"
import { perAgentKeys } from "../../config/settings/All.js"
import { MemoryDir } from "../../config/settings/Memory.js"
import { HostError } from "./HostError.js"

/** The keys an agent's config.env may set: no secrets, no paths. */
export const AGENT_KEYS: ReadonlySet<string> = new Set(perAgentKeys)

/** An agent's settings: its AgentConfig, parsed, and the provider its agent and compactor read. */
export interface Settings {
  readonly config: AgentConfig
  readonly provider: ConfigProvider.ConfigProvider
}

/**
 * `config`, parsed from `provider`. The agent and its compactor take
 * `config` as it is (AgentInstance provides it as ParsedAgentConfig);
 * `provider` answers any other setting they read.
 */
export const withParsed = (config: AgentConfig, provider: ConfigProvider.ConfigProvider): Settings => ({ config, provider })

const unavailable = (id: string, message: string) => new HostError({ reason: "unavailable", id, message: `agent ${id}: ${message}` })

/** The agent's config.env, checked; empty when it has none. */
const ownValues = (id: string, directory: string): Effect.Effect<Map<string, string>, HostError> =>
  ConfigFile.read(path.join(directory, "config.env")).pipe(
    Effect.mapError((error) => unavailable(id, error.message)),
    Effect.filterOrFail(
      (values) => [...values.keys()].every((key) => AGENT_KEYS.has(key)),
      (values) => {
        const refused = [...values.keys()].filter((key) => !AGENT_KEYS.has(key))
        return unavailable(
          id,
          `${path.join(directory, "config.env")} may set only ${[...AGENT_KEYS].join(", ")}; refused: ${refused.join(", ")}`
        )
      }
    )
  )

/** The agent's provider: its config.env and its directory over the host's provider. */
export const provider = (
  id: string,
  directory: string,
  host: ConfigProvider.ConfigProvider
): Effect.Effect<ConfigProvider.ConfigProvider, HostError> =>
  Effect.map(ownValues(id, directory), (values) => over(values, directory, host))

const over = (values: Map<string, string>, directory: string, host: ConfigProvider.ConfigProvider) =>
  ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([...values, [MemoryDir.key, directory]])), { preserveEmptyStrings: true }).pipe(ConfigProvider.orElse(host))

/**
 * Agent `id`'s settings: `shared` (the host's) when it has no config.env,
 * else its config.env and directory over `host`, parsed once here. A
 * `fresh` directory (made just now) has none to look for.
 */
export const forAgent = (
  id: string,
  directory: string,
  host: ConfigProvider.ConfigProvider,
  shared: Settings,
  fresh = false
): Effect.Effect<Settings, HostError> =>
  Effect.flatMap(fresh ? Effect.succeed(new Map<string, string>()) : ownValues(id, directory), (values) => {
    if (values.size === 0) return Effect.succeed(shared)
    const agentProvider = over(values, directory, host)
    return AgentConfig.pipe(
      Effect.provideService(ConfigProvider.ConfigProvider, agentProvider),
      Effect.mapError((error) => unavailable(id, String(error))),
      Effect.map((config) => withParsed(config, agentProvider))
    )
  })

/**
 * The check of agent `id`'s own PLANCKCLAW_MAX_MESSAGE_BYTES, which may lower
 * the host's for its messages but not raise it: the host's caps every message
 * (its HTTP body is read only that far, and checked against it). A message
 * over a lower limit is refused before it is journaled, as too large; a limit
 * above the host's is warned of at the agent's start. Undefined when the
 * host's check is the agent's.
 */
export const ownMessageLimit = (
  id: string,
  own: Settings,
  host: Settings
): Effect.Effect<((text: string) => HostError | undefined) | undefined> => {
  const limit = own.config.maxMessageBytes
  const hostLimit = host.config.maxMessageBytes
  if (limit > hostLimit) {
    return Effect.as(
      Effect.logWarning(
        `agent ${id}: PLANCKCLAW_MAX_MESSAGE_BYTES ${limit} in its config.env is over the host's ${hostLimit}, which caps ` +
          `every agent's: its messages are held to ${hostLimit} bytes (an agent's own value can only lower the host's)`
      ),
      undefined
    )
  }
  if (limit === hostLimit) return Effect.succeed(undefined)
  return Effect.succeed((text) => {
    const size = Buffer.byteLength(text, "utf8")
    return size <= limit ? undefined : new HostError({
      reason: "too-large",
      id,
      message: `the message is ${size} bytes; agent ${id} takes at most ${limit} (PLANCKCLAW_MAX_MESSAGE_BYTES in its config.env)`
    })
  })
}
