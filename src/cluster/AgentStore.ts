/**
 * Where an entity's agent keeps its memory: what the entity builds, per
 * agent, when it starts (its Memory and Compactor, under the agent's
 * settings). `files` is the memory of `planckclaw serve`, a directory per
 * agent under PLANCKCLAW_AGENTS_DIR: runners see the same agents only when
 * they share that directory (one machine). Listing and status read the same
 * place.
 */
import * as path from "node:path"
import * as fs from "node:fs"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { Brain, type BrainService } from "../Brain.js"
import * as Compactor from "../memory/Compactor.js"
import * as Memory from "../memory/Memory.js"
import * as AgentId from "../service/AgentId.js"
import * as AgentSettings from "../service/AgentSettings.js"
import * as AgentStatus from "../service/AgentStatus.js"
import { HostError } from "../service/HostError.js"

export interface AgentParts {
  readonly memory: Context.Context<Memory.Memory | Compactor.Compactor>
  /** The agent's settings (model, history sizes) over the host's. */
  readonly provider: ConfigProvider.ConfigProvider
}

export interface AgentStoreService {
  /** Where the agents are, for the log and the API (never a password). */
  readonly where: string
  readonly open: (id: AgentId.AgentId, brain: BrainService) => Effect.Effect<AgentParts, HostError, Scope.Scope>
  readonly exists: (id: AgentId.AgentId) => Effect.Effect<boolean, HostError>
  readonly status: (id: AgentId.AgentId, running: boolean) => Effect.Effect<AgentStatus.AgentInfo, HostError>
  readonly ids: Effect.Effect<ReadonlyArray<AgentId.AgentId>, HostError>
}

export class AgentStore extends Context.Tag("planckclaw/cluster/AgentStore")<AgentStore, AgentStoreService>() {}

const unavailable = (id: string, message: string) => new HostError({ reason: "unavailable", id, message: `agent ${id}: ${message}` })

/** The agents as directories under `agentsDir`, as `planckclaw serve` keeps them. */
export const files = (options: {
  readonly agentsDir: string
  readonly defaultSoulFile: string
  readonly provider: ConfigProvider.ConfigProvider
}): AgentStoreService => {
  const directoryOf = (id: AgentId.AgentId) => path.join(options.agentsDir, id)
  return {
    where: options.agentsDir,
    open: (id, brain) =>
      Effect.gen(function*() {
        const directory = directoryOf(id)
        if (fs.existsSync(directory) && !AgentStatus.isAgentDirectory(directory)) {
          return yield* unavailable(id, `${directory} is not a directory (a link or a file); refusing to use it`)
        }
        const provider = yield* AgentSettings.provider(id, directory, options.provider)
        const memory = yield* Layer.build(
          Compactor.layer.pipe(
            Layer.provideMerge(Memory.layerWith({ fallbackSoulFile: options.defaultSoulFile })),
            Layer.provide(Layer.succeed(Brain, brain))
          )
        ).pipe(
          Effect.withConfigProvider(provider),
          Effect.mapError((error) => unavailable(id, error._tag === "MemoryError" ? error.message : String(error)))
        )
        return { memory, provider }
      }),
    exists: (id) => Effect.sync(() => AgentStatus.isAgentDirectory(directoryOf(id))),
    status: (id, running) => Effect.sync(() => AgentStatus.read(id, directoryOf(id), running)),
    ids: Effect.suspend(() => {
      const names = Either.try(() => fs.readdirSync(options.agentsDir))
      if (Either.isLeft(names)) {
        return Effect.fail(new HostError({ reason: "unavailable", message: `cannot list ${options.agentsDir}: ${String(names.left)}` }))
      }
      return Effect.succeed(names.right.filter(AgentId.is).filter((id) => AgentStatus.isAgentDirectory(directoryOf(id))).sort())
    })
  }
}
