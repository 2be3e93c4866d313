/**
 * `planckclaw tools`' MCP lines: each server of the home's mcp.json started
 * to ask it, with its tools (as the model sees their names) or why it offers
 * none. With `--agent ID`, that agent's own servers too (serve's AgentMcp:
 * held from a pool as serve holds them, merged as serve merges them), each
 * said to come from the agent's file, and every server of the home's that
 * one of them replaces for this agent said so.
 */
import * as fs from "node:fs"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as ClawsWithMcp from "../../claws/mcp/ClawsWithMcp.js"
import type { Connection } from "../../claws/mcp/McpConnection.js"
import * as McpNames from "../../claws/mcp/McpNames.js"
import * as AgentMcp from "../../hosts/serve/AgentMcp.js"
import * as McpPool from "../../hosts/serve/McpPool.js"
import type { ToolCatalog, ToolProblem } from "../../ports/Claws.js"
import { printable } from "../../runtime/Printable.js"

/** The declarations left out, with why (nothing when there are none). */
export const skipped = (problems: ReadonlyArray<ToolProblem>) =>
  Effect.gen(function*() {
    if (problems.length === 0) return
    yield* Console.log(`Skipped ${problems.length} declaration${problems.length === 1 ? "" : "s"}:`)
    for (const problem of problems) yield* Console.log(`  ${problem.source}: ${problem.reason}`)
  })

/** One server's lines: its tools in `catalog`, or why it offers none. `from`: where its entry is, when not the home's file. */
const serverLines = (name: string, connection: Connection, catalog: ToolCatalog, from: string) =>
  Effect.gen(function*() {
    const state = connection.state()
    const server = `MCP server ${name} (${McpNames.describeServer(connection.entry)})${from}`
    if (state._tag === "Down") return yield* Console.log(`${server} is not running: ${state.reason}`)
    yield* Console.log(`Tools of ${server}:`)
    for (const tool of catalog.tools) {
      if (McpNames.parseToolName(tool.name)?.server === name) yield* Console.log(`  ${tool.name}  ${printable(tool.description)}`)
    }
  })

/** The agent `tools --agent ID` lists for (AgentStatus.existingAgent). */
export interface Agent {
  readonly id: string
  readonly directory: string
}

/** The line of an agent without servers of its own: it is offered the home's alone. */
const noneOwn = (agent: Agent) => {
  const file = AgentMcp.fileIn(agent.directory)
  return fs.existsSync(file)
    ? `Agent ${agent.id}'s ${file} names no MCP server: it is offered the home's alone.`
    : `Agent ${agent.id} has no mcp.json of its own (${file}): it is offered the home's MCP servers alone.`
}

/**
 * The MCP lines: the home's servers, then (with `agent`) the agent's own,
 * then the declarations skipped. Nothing for a home without mcp.json when
 * no agent is asked about. The servers are stopped when it ends.
 */
export const lines = (agent: Agent | undefined) =>
  Effect.gen(function*() {
    const { mcp, servers } = yield* ClawsWithMcp.makeMcp({ logDown: false })
    const own = agent === undefined
      ? undefined
      : yield* AgentMcp.ownServers(agent.directory, yield* McpPool.fromSettings({ logDown: false }))
    const homeHasNone = servers.servers.length === 0 && servers.problems.length === 0
    if (own === undefined && homeHasNone) {
      if (agent !== undefined) yield* Console.log(noneOwn(agent))
      return
    }
    // What the agent's turns would be offered: the home's tools with its own in place of the home's of the same name.
    const catalog = yield* (own === undefined ? mcp.list : AgentMcp.withOwnServers(mcp, own.claws, own.names).list)
    for (const [name, connection] of mcp.connections) {
      if (own?.names.has(name) === true) {
        yield* Console.log(
          `MCP server ${name} (${McpNames.describeServer(connection.entry)}) of the home's mcp.json: ` +
            `replaced for agent ${agent!.id} by its own`
        )
      } else yield* serverLines(name, connection, catalog, "")
    }
    if (own !== undefined) {
      // By the name the agent's file gives it (a pooled server's entry may carry another name).
      for (const [name, connection] of own.connections) yield* serverLines(name, connection, catalog, ` from ${own.config.file}`)
    }
    yield* skipped(catalog.problems.filter((problem) => !/^not running: /.test(problem.reason)))
    if (agent !== undefined && own === undefined) yield* Console.log(noneOwn(agent))
  }).pipe(Effect.scoped)
