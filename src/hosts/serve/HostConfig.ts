/**
 * The host's settings (HostConfig): read by the host as it starts, and on their own by the
 * cluster's host, the HTTP limits and the CLI's settings listing. Apart from AgentHost.ts so that
 * file holds the host's making alone.
 */
import * as path from "node:path"
import * as Config from "effect/Config"
import { AgentConfig } from "../../config/AgentConfig.js"
import { MemoryConfig } from "../../memory/Memory.js"
import * as IdempotencyStore from "./IdempotencyStore.js"
import { numberOf, textOf } from "../../config/ConfigRange.js"
import { AgentIdle, AgentsDir, AgentsHoldingFiles, MaxConcurrentTurns } from "../../config/settings/Serve.js"

export const HostConfig = Config.all({
  agentsDir: textOf(AgentsDir).pipe(Config.map((dir) => path.resolve(dir))),
  /** Seconds without a message before an agent is released. */
  idleSeconds: numberOf(AgentIdle),
  maxConcurrentTurns: numberOf(MaxConcurrentTurns),
  /** Started agents keeping their memory files open between messages (OpenFiles.ts), the most recently used. */
  agentsHoldingFiles: numberOf(AgentsHoldingFiles),
  idempotencyKeys: IdempotencyStore.IdempotencyConfig,
  /** The host's limit, which caps every agent's; an agent's config.env may lower it for that agent (AgentSettings.ownMessageLimit). */
  maxMessageBytes: Config.map(AgentConfig, (config) => config.maxMessageBytes),
  /** The host's memory directory: its soul.md is the soul of agents without one. */
  defaultDir: MemoryConfig
})
export type HostConfig = Config.Success<typeof HostConfig>
