/**
 * What every agent of the host shares (AgentInstance's Shared), made once as
 * the host starts: the brain, its calls in flight across all agents bounded
 * by PLANCKCLAW_MAX_CONCURRENT_TURNS, and the claws; the host's settings,
 * parsed once; the price table; the host's default soul; the owner file the
 * agents' locks link to; the pool of the agents' own MCP servers. First,
 * PLANCKCLAW_AGENTS_DIR is made if missing and checked usable, once for
 * every agent.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Semaphore from "effect/Semaphore"
import { AgentConfig } from "../../config/AgentConfig.js"
import { BrainLabelConfig } from "../../config/BrainChoice.js"
import * as FallbackSoul from "../../memory/FallbackSoul.js"
import { ensureWritable } from "../../memory/Memory.js"
import * as OwnerFile from "../../memory/OwnerFile.js"
import { Brain, type BrainService, limitedBy } from "../../ports/Brain.js"
import { Claws } from "../../ports/Claws.js"
import * as Prices from "../../usage/Prices.js"
import { refuse } from "./AgentHostService.js"
import type { Shared } from "./AgentInstanceService.js"
import * as AgentSettings from "./AgentSettings.js"
import * as AgentStatus from "./AgentStatus.js"
import { HostConfig } from "./HostConfig.js"
import * as McpPool from "./McpPool.js"
import * as OpenFiles from "./OpenFiles.js"

/** The pool of the agents' own MCP servers (cheap: the MCP client loads with a first server). */
const makeMcpPool = McpPool.fromSettings({ logDown: true })

export const make = Effect.gen(function*() {
  const config = yield* HostConfig
  const hostProvider = yield* ConfigProvider.ConfigProvider
  const brain = yield* Brain
  const claws = yield* Claws
  const permits = yield* Semaphore.make(config.maxConcurrentTurns)
  const limited: BrainService = limitedBy(brain, permits)
  const made = Result.try(() => fs.mkdirSync(config.agentsDir, { recursive: true, mode: 0o700 }))
  if (Result.isFailure(made) || !AgentStatus.isAgentDirectory(config.agentsDir)) {
    return yield* refuse("unavailable", `PLANCKCLAW_AGENTS_DIR ${config.agentsDir} is not a directory this process can use`)
  }
  // Probed once for every agent (they share its filesystem) rather than at each agent's start;
  // each memory file is still opened only if it is a regular file of this user, never through a link.
  yield* ensureWritable(config.agentsDir).pipe(
    Effect.catch((error) => refuse("unavailable", `PLANCKCLAW_AGENTS_DIR: ${error.message}`))
  )
  yield* AgentStatus.warnIfOthersCanWrite(`PLANCKCLAW_AGENTS_DIR ${config.agentsDir}`, config.agentsDir, "every agent's")
  const agentConfig = yield* AgentConfig
  const prices = yield* Prices.PricesConfig.pipe(Effect.catchTag("PricesError", (error) => refuse("unavailable", error.message)))
  // Its removal is registered before the agents, so it runs after they let go: their locks are links to it.
  const ownerFile = yield* OwnerFile.onFirstUse(config.agentsDir)
  const defaultSoulFile = path.join(config.defaultDir, "soul.md")
  const defaultSoul = FallbackSoul.reader(defaultSoulFile)
  return {
    brain: limited,
    claws,
    provider: hostProvider,
    settings: AgentSettings.withParsed(agentConfig, hostProvider),
    prices,
    defaultSoul,
    idempotencyKeys: config.idempotencyKeys,
    openFiles: OpenFiles.make(config.agentsHoldingFiles),
    ownerFile,
    brainLabel: yield* BrainLabelConfig,
    mcpPool: yield* makeMcpPool
  } satisfies Shared
})
