/**
 * An agent's own mcp.json (in its directory) in serve: its servers' tools
 * beside the host's claws (the scripts and the home's mcp.json), its entry
 * winning over the home's of the same name. Its servers come from the
 * host's pool (McpPool), held while the agent is started. A bad file, or a
 * server past the pool's bound, refuses only those tools, with the file
 * and the reason: the claws and the home's servers still work.
 */
import * as path from "node:path"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as McpConfig from "../../claws/mcp/McpConfig.js"
import type { Connection } from "../../claws/mcp/McpConnection.js"
import { parseToolName } from "../../claws/mcp/McpNames.js"
import { type ClawsService, type ToolCatalog, type ToolProblem, unknownTool } from "../../ports/Claws.js"
import { printable } from "../../runtime/Printable.js"
import type { McpPool } from "./McpPool.js"

export const FILE_NAME = "mcp.json"

/** Whether `name` is a tool of one of `servers`. */
const ofServers = (servers: ReadonlySet<string>, name: string) => {
  const parsed = parseToolName(name)
  return parsed !== undefined && servers.has(parsed.server)
}

/** `base` with `own`'s servers' tools, its servers replacing the base's of the same name. */
export const withOwnServers = (base: ClawsService, own: ClawsService, servers: ReadonlySet<string>): ClawsService => {
  // The same two catalogues give the same object (the agent's warm path compares them).
  let last: { readonly base: ToolCatalog; readonly own: ToolCatalog; readonly merged: ToolCatalog } | undefined
  const merge = (fromBase: ToolCatalog, fromOwn: ToolCatalog): ToolCatalog => {
    if (last !== undefined && last.base === fromBase && last.own === fromOwn) return last.merged
    const merged: ToolCatalog = {
      tools: [...fromBase.tools.filter((tool) => !ofServers(servers, tool.name)), ...fromOwn.tools],
      problems: [...fromBase.problems, ...fromOwn.problems]
    }
    last = { base: fromBase, own: fromOwn, merged }
    return merged
  }
  const both = (baseList: ClawsService["list"]) =>
    Effect.map(Effect.all([baseList, own.list], { concurrency: "unbounded" }), ([a, b]) => merge(a, b))
  return {
    list: both(base.list),
    listOnRequest: both(base.listOnRequest ?? base.list),
    call: (name, input) => ofServers(servers, name) ? own.call(name, input) : base.call(name, input)
  }
}

/** The tools of `connections` under their names in the agent's `file` (McpClaws, loaded only when there are some). */
const clawsOf = (connections: ReadonlyMap<string, Connection>, problems: ReadonlyArray<ToolProblem>, file: string) =>
  connections.size === 0
    ? Effect.succeed<ClawsService>({
      list: Effect.succeed({ tools: [], problems }),
      call: (name) => Effect.succeed(unknownTool(name))
    })
    : Effect.map(Effect.promise(() => import("../../claws/mcp/McpClaws.js")), (McpClaws) =>
      McpClaws.fromConnections(connections, problems, file))

/** What an agent's own mcp.json gives it, its servers held for the caller's scope. */
export interface OwnServers {
  /** The file as read: its servers, and its refused entries (with the file and the reason). */
  readonly config: McpConfig.McpServers
  /** Every name the file gives: each replaces the home's server of that name, even one refused here (the agent asked for its own). */
  readonly names: ReadonlySet<string>
  /** The servers held, by their name in the file. */
  readonly connections: ReadonlyMap<string, Connection>
  /** The servers the pool refused (past its bound), with the file and why. */
  readonly refused: ReadonlyArray<ToolProblem>
  /** Their tools, the file's problems and the pool's refusals first. */
  readonly claws: ClawsService
}

/** The file of the agent in `directory`. */
export const fileIn = (directory: string): string => path.join(directory, FILE_NAME)

/**
 * The own servers of the agent in `directory`, each held from `pool`;
 * undefined when it has no mcp.json there, or one naming no server and
 * refusing nothing. The pool's servers get no secret (McpEnvironment,
 * under the host's secrets: an agent's config.env holds none).
 */
export const ownServers = (
  directory: string,
  pool: McpPool | undefined
): Effect.Effect<OwnServers | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    const file = fileIn(directory)
    const config = McpConfig.read(file)
    if (config.servers.length === 0 && config.problems.length === 0) return undefined
    const refused: Array<ToolProblem> = []
    const connections = new Map<string, Connection>()
    for (const entry of config.servers) {
      const held = pool === undefined
        ? Effect.fail("refused: this host shares no MCP servers between agents")
        : pool.acquire(entry)
      const acquired = yield* Effect.result(held)
      if (acquired._tag === "Success") connections.set(entry.name, acquired.success)
      else refused.push({ source: `${printable(file)}: server ${printable(JSON.stringify(entry.name))}`, reason: acquired.failure })
    }
    const claws = yield* clawsOf(connections, [...config.problems, ...refused], file)
    return { config, names: new Set(config.servers.map((entry) => entry.name)), connections, refused, claws }
  })

/** The claws of the agent in `directory`: `base` alone without an mcp.json there. */
export const clawsFor = (options: {
  readonly directory: string
  readonly base: ClawsService
  readonly pool: McpPool | undefined
  /** The directory was made just now: it has no mcp.json to read. */
  readonly fresh?: boolean | undefined
}): Effect.Effect<ClawsService, never, Scope.Scope> =>
  Effect.gen(function*() {
    if (options.fresh === true) return options.base
    const own = yield* ownServers(options.directory, options.pool)
    if (own === undefined) return options.base
    for (const problem of [...own.config.problems, ...own.refused]) {
      yield* Effect.logWarning(`MCP problem at ${problem.source}: ${problem.reason}`)
    }
    return withOwnServers(options.base, own.claws, own.names)
  })
