/**
 * The claws as the agent sees them: the scripts in CLAWS_DIR and the tools
 * of the MCP servers in mcp.json, one Claws service. The MCP tools have the
 * claws' limits (PLANCKCLAW_CLAW_TIMEOUT, PLANCKCLAW_CLAW_OUTPUT_MAX) and
 * report as they do: a failure is an error result, a bad declaration a
 * problem with its source. Without servers (no mcp.json, or none usable)
 * the scripts are the service, as before.
 */
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { textOf } from "../../config/ConfigRange.js"
import { McpConfig as McpConfigSetting } from "../../config/settings/Claws.js"
import { Claws, type ClawsService, OfferedClaws, type ToolCatalog, type ToolProblem, unknownTool } from "../../ports/Claws.js"
import type * as SpawnHelper from "../../runtime/process/SpawnHelper.js"
import * as ScriptClaws from "../ScriptClaws.js"
import type { McpClaws } from "./McpClaws.js"
import * as McpConfig from "./McpConfig.js"
import { reservedReason, toolPrefix } from "./McpNames.js"

export const McpConfigFile = textOf(McpConfigSetting, (file) => file.length > 0 ? { value: file } : "must not be empty")

const reserved = (source: string, name: string): ToolProblem => ({ source, reason: reservedReason(name) })

/**
 * `scripts` and `mcp` as one service; a claw that declares an `mcp__` name is
 * left out, with why (the script claws' discovery has left theirs out
 * already: ClawDeclarations; an embedder's claws may hold one).
 */
export const withMcp = (scripts: ClawsService, mcp: ClawsService): ClawsService => {
  // The same two catalogues give the same object (the agent's warm path compares them).
  let last: { readonly scripts: ToolCatalog; readonly mcp: ToolCatalog; readonly merged: ToolCatalog } | undefined
  const merge = (fromScripts: ToolCatalog, fromMcp: ToolCatalog): ToolCatalog => {
    if (last !== undefined && last.scripts === fromScripts && last.mcp === fromMcp) return last.merged
    const clash = fromScripts.tools.filter((tool) => tool.name.startsWith(toolPrefix))
    const merged: ToolCatalog = {
      tools: [...fromScripts.tools.filter((tool) => !tool.name.startsWith(toolPrefix)), ...fromMcp.tools],
      problems: [...fromScripts.problems, ...clash.map((tool) => reserved("claws", tool.name)), ...fromMcp.problems]
    }
    last = { scripts: fromScripts, mcp: fromMcp, merged }
    return merged
  }
  const both = (scriptsList: ClawsService["list"]) =>
    Effect.map(Effect.all([scriptsList, mcp.list], { concurrency: "unbounded" }), ([a, b]) => merge(a, b))
  return {
    list: both(scripts.list),
    listOnRequest: both(scripts.listOnRequest ?? scripts.list),
    call: (name, input) => name.startsWith(toolPrefix) ? mcp.call(name, input) : scripts.call(name, input)
  }
}

/** What a file without servers offers: its problems, no tools. */
const withoutServers = (servers: McpConfig.McpServers): McpClaws => ({
  list: Effect.succeed({ tools: [], problems: servers.problems }),
  call: (name) => Effect.succeed(unknownTool(name)),
  connections: new Map()
})

/**
 * The MCP side alone, for the settings in context: the servers of the
 * configured mcp.json (its problems not logged). The MCP client is loaded
 * only when the file names a server.
 */
export const makeMcp = (options: { readonly logDown: boolean }) =>
  Effect.gen(function*() {
    const file = yield* McpConfigFile
    const scripts = yield* ScriptClaws.ScriptsConfig
    const servers = McpConfig.read(file)
    if (servers.servers.length === 0) return { servers, mcp: withoutServers(servers) }
    const McpClaws = yield* Effect.promise(() => import("./McpClaws.js"))
    const mcp = yield* McpClaws.makeOnPlatform(servers, {
      timeout: scripts.timeout,
      outputMax: scripts.outputMax,
      withheldSecrets: scripts.withheldSecrets,
      logDown: options.logDown
    })
    return { servers, mcp }
  })

/** The watched scripts alone, and with the MCP servers' tools beside them (the running agent's). */
const makeBoth = Effect.gen(function*() {
  const scripts = yield* Effect.flatMap(ScriptClaws.ScriptsConfig, (config) => ScriptClaws.makeWatched(config))
  const { mcp, servers } = yield* makeMcp({ logDown: true })
  for (const problem of servers.problems) yield* Effect.logWarning(`MCP problem at ${problem.source}: ${problem.reason}`)
  return { scripts, claws: servers.servers.length === 0 && servers.problems.length === 0 ? scripts : withMcp(scripts, mcp) }
})

/** The watched scripts with the MCP servers' tools beside them (the running agent). */
export const makeWatched: Effect.Effect<ClawsService, Config.ConfigError, Scope.Scope | SpawnHelper.SpawnHelper> = Effect.map(
  makeBoth,
  ({ claws }) => claws
)

/** ScriptClaws.layer with the MCP servers of mcp.json: needs the spawn helper its claws start from. */
export const layer: Layer.Layer<Claws, Config.ConfigError, SpawnHelper.SpawnHelper> = Layer.effect(Claws, makeWatched)

/**
 * `layer`, and the scripts alone as OfferedClaws: serve offers those over
 * MCP, and building its route then starts no MCP server (they start on an
 * agent's first use, not when serve starts).
 */
export const layerOffering: Layer.Layer<Claws | OfferedClaws, Config.ConfigError, SpawnHelper.SpawnHelper> = Layer
  .effectContext(Effect.map(makeBoth, ({ claws, scripts }) => Context.make(Claws, claws).pipe(Context.add(OfferedClaws, scripts))))
