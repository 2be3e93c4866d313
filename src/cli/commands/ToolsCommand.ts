/** `planckclaw tools`: the tools the claws declare, and every declaration skipped, with why. */
import * as Command from "effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as ScriptClaws from "../../claws/ScriptClaws.js"
import { withSettings } from "../CliSettings.js"
import * as HelpText from "../HelpText.js"

export const tools = Command.make("tools", {}, () =>
  Effect.gen(function*() {
    const config = yield* ScriptClaws.ScriptsConfig
    const claws = yield* ScriptClaws.make(config)
    const catalog = yield* claws.list
    yield* Console.log(
      catalog.tools.length === 0 ? `No tools found in ${config.directory}.` : `Tools in ${config.directory}:`
    )
    for (const tool of catalog.tools) yield* Console.log(`  ${tool.name}  ${tool.description}`)
    if (catalog.problems.length > 0) {
      yield* Console.log(`Skipped ${catalog.problems.length} declaration${catalog.problems.length === 1 ? "" : "s"}:`)
      for (const problem of catalog.problems) yield* Console.log(`  ${problem.source}: ${problem.reason}`)
    }
  }).pipe(withSettings(new Map()))).pipe(
    Command.withDescription(HelpText.summary("tools"))
  )

