/**
 * `planckclaw tools`: the tools the claws declare, and every declaration
 * skipped, with why; then each MCP server of mcp.json, started to ask it,
 * with its tools (as the model sees their names) or why it offers none
 * (ToolsMcp). With `--agent ID`, what that agent of `serve` is offered: its
 * own mcp.json's servers too, in place of the home's of the same name.
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ScriptClaws from "../../claws/ScriptClaws.js"
import * as AgentStatus from "../../hosts/serve/AgentStatus.js"
import { withSettings } from "../CliSettings.js"
import * as HelpText from "../HelpText.js"
import * as ToolsMcp from "./ToolsMcp.js"

export const tools = Command.make(
  "tools",
  { agent: Flag.String("agent").pipe(Flag.optional, Flag.withDescription(HelpText.describe("tools", "--agent"))) },
  (options) =>
    Effect.gen(function*() {
      // An agent that is not one is refused before anything is listed or started.
      const agent = Option.isSome(options.agent) ? yield* AgentStatus.existingAgent(options.agent.value) : undefined
      const config = yield* ScriptClaws.ScriptsConfig
      const claws = yield* ScriptClaws.make(config)
      const catalog = yield* claws.list
      yield* Console.log(
        catalog.tools.length === 0 ? `No tools found in ${config.directory}.` : `Tools in ${config.directory}:`
      )
      for (const tool of catalog.tools) yield* Console.log(`  ${tool.name}  ${tool.description}`)
      yield* ToolsMcp.skipped(catalog.problems)
      yield* ToolsMcp.lines(agent)
    }).pipe(withSettings(new Map()))
).pipe(Command.withDescription(HelpText.summary("tools")))
