/**
 * Where one agent's settings come from: its own `config.env` (only the model
 * and the turn settings), then the host's settings. PLANCKCLAW_DIR is the
 * agent's directory, whatever the host has. (The soul is the agent's
 * `soul.md`, or else the host's default soul, PLANCKCLAW_DIR/soul.md of the
 * host, or else the built-in persona: Memory's `fallbackSoulFile`, given by
 * AgentInstance.ts.)
 */
import * as path from "node:path"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as ConfigFile from "../config/ConfigFile.js"
import { HostError } from "./HostError.js"

/** The keys an agent's config.env may set: no secrets, no paths. */
export const AGENT_KEYS: ReadonlySet<string> = new Set([
  "PLANCKCLAW_MODEL",
  "PLANCKCLAW_MAX_TOKENS",
  "HISTORY_MAX",
  "HISTORY_KEEP",
  "PLANCKCLAW_MAX_TOOL_ROUNDS",
  "PLANCKCLAW_MAX_MESSAGE_BYTES"
])

/** The agent's provider: its config.env and its directory over the host's provider. */
export const provider = (
  id: string,
  directory: string,
  host: ConfigProvider.ConfigProvider
): Effect.Effect<ConfigProvider.ConfigProvider, HostError> =>
  ConfigFile.read(path.join(directory, "config.env")).pipe(
    Effect.mapError((error) => new HostError({ reason: "unavailable", id, message: `agent ${id}: ${error.message}` })),
    Effect.filterOrFail(
      (values) => [...values.keys()].every((key) => AGENT_KEYS.has(key)),
      (values) => {
        const refused = [...values.keys()].filter((key) => !AGENT_KEYS.has(key))
        return new HostError({
          reason: "unavailable",
          id,
          message: `agent ${id}: ${path.join(directory, "config.env")} may set only ${[...AGENT_KEYS].join(", ")}; ` +
            `refused: ${refused.join(", ")}`
        })
      }
    ),
    Effect.map((values) =>
      ConfigProvider.fromMap(new Map([...values, ["PLANCKCLAW_DIR", directory]])).pipe(
        ConfigProvider.orElse(() => host)
      )
    )
  )
