/**
 * `planckclaw tools`: the tools the claws declare, and every declaration
 * skipped, with why; then each MCP server of mcp.json, started to ask it,
 * with its tools (as the model sees their names) or why it offers none
 * (ToolsMcp). Between them, the schedule tools that `run` and `serve` give
 * every agent beside the claws (a claw's tool of the same name is hidden by
 * them). With `--agent ID`, what that agent of `serve` is offered: its own
 * mcp.json's servers too, in place of the home's of the same name.
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ScriptClaws from "../../claws/ScriptClaws.js"
import * as AgentStatus from "../../hosts/serve/AgentStatus.js"
import * as ScheduleInput from "../../schedule/ScheduleInput.js"
import * as ScheduleTool from "../../schedule/ScheduleTool.js"
import { withSettings } from "../CliSettings.js"
import * as HelpText from "../HelpText.js"
import * as ToolsMcp from "./ToolsMcp.js"

/** A description's first sentence: the built-in ones run to a paragraph. */
const firstSentence = (description: string) => /^.*?\.(?=\s|$)/.exec(description)?.[0] ?? description

/** The schedule tools every agent of `run` and `serve` is given beside the claws, and the claws' tools they hide. */
const builtIn = (clawTools: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const schedule = ScheduleTool.definitions(ScheduleInput.localZone())
    yield* Console.log("Built in, beside the claws (the agent's schedule: planckclaw help schedule):")
    for (const tool of schedule) yield* Console.log(`  ${tool.name}  ${firstSentence(tool.description)}`)
    for (const tool of schedule) {
      if (clawTools.includes(tool.name)) yield* Console.log(`  the claws' ${tool.name} is hidden by this one: rename it to offer it`)
    }
  })

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
      yield* builtIn(catalog.tools.map((tool) => tool.name))
      yield* ToolsMcp.lines(agent)
    }).pipe(withSettings(new Map()))
).pipe(Command.withDescription(HelpText.summary("tools")))
