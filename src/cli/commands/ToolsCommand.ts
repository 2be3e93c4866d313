/**
 * `planckclaw tools`: the tools the claws declare, and every declaration
 * skipped, with why; then each MCP server of mcp.json, started to ask it,
 * with its tools (as the model sees their names) or why it offers none.
 */
import * as Command from "effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as ClawsWithMcp from "../../claws/mcp/ClawsWithMcp.js"
import * as McpNames from "../../claws/mcp/McpNames.js"
import * as ScriptClaws from "../../claws/ScriptClaws.js"
import type { ToolProblem } from "../../ports/Claws.js"
import { printable } from "../../runtime/Printable.js"
import { withSettings } from "../CliSettings.js"
import * as HelpText from "../HelpText.js"

const skipped = (problems: ReadonlyArray<ToolProblem>) =>
  Effect.gen(function*() {
    if (problems.length === 0) return
    yield* Console.log(`Skipped ${problems.length} declaration${problems.length === 1 ? "" : "s"}:`)
    for (const problem of problems) yield* Console.log(`  ${problem.source}: ${problem.reason}`)
  })

/** The MCP servers' lines; nothing when mcp.json names none. */
const mcpTools = Effect.gen(function*() {
  const { mcp, servers } = yield* ClawsWithMcp.makeMcp({ logDown: false })
  if (servers.servers.length === 0 && servers.problems.length === 0) return
  const catalog = yield* mcp.list
  for (const connection of mcp.connections.values()) {
    const name = connection.entry.name
    const tools = catalog.tools.filter((tool) => McpNames.parseToolName(tool.name)?.server === name)
    const state = connection.state()
    yield* Console.log(
      state._tag === "Down"
        ? `MCP server ${name} (${McpNames.describeServer(connection.entry)}) is not running: ${state.reason}`
        : `Tools of MCP server ${name} (${McpNames.describeServer(connection.entry)}):`
    )
    if (state._tag !== "Down") for (const tool of tools) yield* Console.log(`  ${tool.name}  ${printable(tool.description)}`)
  }
  yield* skipped(catalog.problems.filter((problem) => !/^not running: /.test(problem.reason)))
}).pipe(Effect.scoped)

export const tools = Command.make("tools", {}, () =>
  Effect.gen(function*() {
    const config = yield* ScriptClaws.ScriptsConfig
    const claws = yield* ScriptClaws.make(config)
    const catalog = yield* claws.list
    yield* Console.log(
      catalog.tools.length === 0 ? `No tools found in ${config.directory}.` : `Tools in ${config.directory}:`
    )
    for (const tool of catalog.tools) yield* Console.log(`  ${tool.name}  ${tool.description}`)
    yield* skipped(catalog.problems)
    yield* mcpTools
  }).pipe(withSettings(new Map()))).pipe(
    Command.withDescription(HelpText.summary("tools"))
  )
