/**
 * `planckclaw mcp`: this home as an MCP server on standard input and
 * output, for Claude Desktop, Cursor or any MCP client that starts a
 * command (see hosts/mcp/McpHost.ts for what it offers). Ends when the
 * client closes its input. The brain is called in process, as `serve`
 * calls it: the built-in adapter `--brain` or PLANCKCLAW_BRAIN names.
 * Standard output carries only the protocol; logs go to standard error.
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Agent from "../../agent/Agent.js"
import * as ClawsWithMcp from "../../claws/mcp/ClawsWithMcp.js"
import * as ScriptClaws from "../../claws/ScriptClaws.js"
import * as Bridges from "../../pipes/Bridges.js"
import { debugOption, modelOption } from "../CliFlags.js"
import { runFlags, withSettings } from "../CliSettings.js"
import * as HelpText from "../HelpText.js"

const brainOption = Flag.String("brain").pipe(
  Flag.optional,
  Flag.withDescription("the brain ask_agent calls, in process: anthropic or openai; default PLANCKCLAW_BRAIN, else anthropic")
)

/** The built-in brain the settings choose: ask_agent calls it in process, as serve does. */
const inProcessBrain = Effect.gen(function*() {
  const brain = yield* Effect.flatMap(Bridges.BrainChoiceConfig, (name) => Bridges.choose("brain", name, Bridges.brainNames))
  if (brain._tag !== "Builtin") {
    return yield* new Bridges.BridgeChoiceError({
      reason: "unknown",
      message: "planckclaw mcp calls a built-in brain in process: use --brain anthropic or --brain openai"
    })
  }
  return Bridges.brainAdapters[brain.name]
})

export const mcp = Command.make("mcp", { brain: brainOption, model: modelOption, debug: debugOption }, (options) =>
  Effect.gen(function*() {
    const brain = yield* inProcessBrain
    const claws = yield* Effect.flatMap(ScriptClaws.ScriptsConfig, (config) => ScriptClaws.makeWatched(config))
    // The agent ask_agent talks to, holding the memory directory as `run` does; the claws and MCP servers beside.
    const agentLayer = Agent.layerWithMemory.pipe(Layer.provide(Layer.merge(brain, ClawsWithMcp.layer)))
    // effect/ai's server is loaded only by this command, not at every start of the others.
    const McpStdio = yield* Effect.promise(() => import("../../hosts/mcp/McpStdio.js"))
    yield* McpStdio.serve(claws, agentLayer)
  }).pipe(Effect.scoped, withSettings(runFlags(options)))).pipe(
    Command.withDescription(HelpText.summary("mcp"))
  )
