/**
 * The command line: `planckclaw run | serve | compact | tools | usage | bridge | init | help`. Layers
 * are composed here, at the edge, from the choices the flags make. The help people read is HelpText's.
 */
import * as path from "node:path"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as AgentHost from "../hosts/serve/AgentHost.js"
import * as AgentId from "../hosts/serve/AgentId.js"
import * as AgentSettings from "../hosts/serve/AgentSettings.js"
import * as AgentStatus from "../hosts/serve/AgentStatus.js"
import * as HelpText from "./HelpText.js"
import { initCommand } from "./commands/InitCommand.js"
import { serve } from "./commands/ServeCommand.js"
import { memory } from "./commands/MemoryCommand.js"
import { debugOption } from "./CliFlags.js"
import { debugFlags, withSettings } from "./CliSettings.js"
import { description, run } from "./commands/RunCommand.js"
import * as Bridges from "../pipes/Bridges.js"
import * as ExecutableBrain from "../pipes/ExecutableBrain.js"
import * as ScriptClaws from "../claws/ScriptClaws.js"
import * as BridgeClaim from "../pipes/BridgeClaim.js"
import * as RunningAgent from "../pipes/RunningAgent.js"
import * as RuntimeDir from "../pipes/RuntimeDir.js"
import * as Compactor from "../agent/Compactor.js"
import * as Memory from "../memory/Memory.js"
import * as UsageLedger from "../usage/UsageLedger.js"
import { doctor } from "./commands/doctor/DoctorCommand.js"
import * as Prices from "../usage/Prices.js"
import * as UsageReport from "../usage/UsageReport.js"

const agentOption = Flag.String("agent").pipe(
  Flag.optional,
  Flag.withDescription("compact agent ID of PLANCKCLAW_AGENTS_DIR (as `planckclaw serve` hosts it) instead of PLANCKCLAW_DIR")
)

/**
 * With `--agent ID`: the settings of agent ID as the service reads them (its
 * directory as PLANCKCLAW_DIR, its config.env over the host's settings).
 */
const forAgent = (agent: Option.Option<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Option.match(agent, {
    onNone: () => effect,
    onSome: (raw) =>
      Effect.gen(function*() {
        const id = yield* Effect.fromResult(AgentId.parse(raw))
        const directory = path.join((yield* AgentHost.HostConfig).agentsDir, id)
        if (!AgentStatus.isAgentDirectory(directory)) {
          return yield* new AgentHost.HostError({ reason: "not-found", id, message: `no agent ${id}: ${directory} is not a directory` })
        }
        const provider = yield* AgentSettings.provider(id, directory, yield* ConfigProvider.ConfigProvider)
        return yield* Effect.provideService(effect, ConfigProvider.ConfigProvider, provider)
      })
  })

const compact = Command.make(
  "compact",
  { debug: debugOption, agent: agentOption },
  (options) =>
    Effect.gen(function*() {
      // Compaction runs on its own: a built-in brain asks the API directly, an executable one
      // is started on pipes of this command's own (ExecutableBrain), beside any run.
      const brain = yield* Effect.flatMap(Bridges.BrainChoiceConfig, (name) => Bridges.choose("brain", name, Bridges.brainNames))
      if (brain._tag === "None") {
        return yield* new Bridges.BridgeChoiceError({
          reason: "unknown",
          message: "planckclaw compact needs a brain to write the summary, and PLANCKCLAW_BRAIN is none: send /compact " +
            "to the running agent, which asks its own brain, or name one (PLANCKCLAW_BRAIN=anthropic, openai or a bridge's path)"
        })
      }
      const layer = Compactor.layer.pipe(
        Layer.provide(UsageLedger.layer),
        Layer.provideMerge(Memory.layer),
        Layer.provide(brain._tag === "Builtin" ? Bridges.brainAdapters[brain.name] : ExecutableBrain.layer(brain.path))
      )
      // The compactor is used inside the layer's scope: its HTTP client lives as long as that.
      const report = yield* Effect.flatMap(Compactor.Compactor, (compactor) => compactor.compactNow).pipe(
        Effect.provide(layer),
        // The entry point prints a MemoryError as it is; here it is a failed compaction.
        Effect.catchTag("MemoryError", (failure) =>
          Effect.fail(new Memory.MemoryError({ ...failure, message: `compaction failed: ${failure.message}` })))
      )
      yield* Option.match(report, {
        onNone: () => Console.log("Nothing to compact: history holds no lines older than the last HISTORY_KEEP."),
        onSome: (done) =>
          Console.log(
            `Compacted: summarised ${done.summarised} lines into summary.md (${done.summaryBytes} bytes, ` +
              `${done.requests} request${done.requests === 1 ? "" : "s"}); kept ${done.kept} lines in history.jsonl` +
              (done.skipped > 0 ? `; dropped ${done.skipped} undecodable lines` : "") + "."
          )
      })
    }).pipe(forAgent(options.agent), withSettings(debugFlags(options.debug)))
).pipe(Command.withDescription("Fold old history into summary.md now (safe while a run or serve is active)."))

const tools = Command.make("tools", {}, () =>
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
    Command.withDescription("List the tools the claws declare, and every declaration that failed to parse, with why.")
  )

/**
 * `planckclaw usage`: the usage ledger summed per day and model, with an
 * estimated cost; reads only, so it is safe while a run is active.
 */
const usage = Command.make(
  "usage",
  {
    since: Flag.String("since").pipe(Flag.optional, Flag.withDescription("only days from this one on (YYYY-MM-DD)")),
    json: Flag.Boolean("json").pipe(Flag.withoutNegation, Flag.withDefault(false), Flag.withDescription("print the report as JSON"))
  },
  (options) =>
    Effect.gen(function*() {
      const since = Option.isSome(options.since) ? yield* Effect.fromResult(UsageReport.parseSince(options.since.value)) : undefined
      const prices = yield* Prices.PricesConfig
      const file = path.join(yield* Memory.MemoryConfig, UsageLedger.FILE_NAME)
      const ledger = yield* Effect.mapError(
        Effect.fromResult(UsageLedger.read(file)),
        (error) => new Memory.MemoryError({ reason: "io", message: `cannot read ${file}: ${error.message}` })
      )
      const report = UsageReport.report(ledger.lines, ledger.skipped, prices, since)
      yield* Console.log(options.json ? JSON.stringify(report, null, 2) : UsageReport.render(report))
    }).pipe(withSettings(new Map()))
).pipe(Command.withDescription("Tokens and estimated cost per day and model, from usage.jsonl (PLANCKCLAW_PRICES overrides prices)."))

const builtinNames = ["cli", "discord", "anthropic", "openai", "scripts"] as const
type BuiltinName = (typeof builtinNames)[number]

/** A bridge process serves one built-in bridge: the run's far ends with the other two left to the run. */
const servedAlone = (name: BuiltinName): Bridges.RunChoices => ({
  bridge: name === "cli" || name === "discord" ? { _tag: "Builtin", name } : { _tag: "None" },
  brain: name === "anthropic" || name === "openai" ? { _tag: "Builtin", name } : { _tag: "None" },
  claw: name === "scripts" ? { _tag: "Builtin", name } : { _tag: "None" }
})

/** A bridge process's work: serve its far end until it, or the run it serves, ends. */
const servedBridge = Effect.gen(function*() {
  const [brain, claws, interact] = [yield* Bridges.BrainEnd, yield* Bridges.ClawsEnd, yield* Bridges.InteractEnd]
  const running = yield* RunningAgent.RunningAgent
  // The first to end, in success or failure (raceAll would wait for a success).
  yield* Effect.raceFirst(running.ended, Effect.raceFirst(brain.done, Effect.raceFirst(claws.done, interact.done)))
})

/** The role a built-in bridge serves (see BridgeClaim). */
const roleOf = (name: BuiltinName): BridgeClaim.Role =>
  name === "cli" || name === "discord" ? "interact" : name === "scripts" ? "claw" : "brain"

/**
 * `planckclaw bridge NAME`: one built-in bridge on the FIFOs of a running
 * agent, once it has claimed its role there (one bridge per role: see
 * BridgeClaim). It ends when it is done (an interact bridge whose input
 * ended and was answered), or fails when the run it serves ends. Its layers
 * are built inside the settings, which come before anything they start.
 */
const bridge = Command.make(
  "bridge",
  { name: Argument.Literals("NAME", builtinNames).pipe(Argument.withDescription("the built-in bridge to serve")) },
  ({ name }) => {
    const claimed = Layer.unwrap(Effect.gen(function*() {
      const [paths, running] = [yield* RuntimeDir.RunPaths, yield* RunningAgent.RunningAgent]
      yield* BridgeClaim.claim(paths.runDir, roleOf(name), running.pid)
      return Bridges.farEnds(servedAlone(name), { withAgent: false })
    }))
    return Effect.provide(servedBridge, claimed.pipe(Layer.provideMerge(RunningAgent.layer))).pipe(withSettings(new Map()))
  }
).pipe(
  Command.withDescription(
    "Serve one built-in bridge on the FIFOs of a running agent (PLANCKCLAW_RUN_DIR), as its own process."
  )
)

/** `planckclaw help [TOPIC]`; bin.ts answers it before parsing (see HelpText), this declares it for completions. */
const help = Command.make(
  "help",
  { topic: Argument.String("TOPIC").pipe(Argument.withDescription("a command name, or config"), Argument.optional) },
  ({ topic }) => {
    const answer = HelpText.answer(["help", ...Option.toArray(topic)], { version: "", color: false })
    return answer._tag === "Print" ? Console.log(answer.text) : Effect.void
  }
).pipe(Command.withDescription("Print the help of a command, or every configuration key (help config)."))

/** Every subcommand, in the order the help lists them. */
export const subcommands = [run, serve, compact, tools, usage, bridge, initCommand, doctor, memory, help] as const

export const command = Command.make("planckclaw").pipe(
  Command.withDescription(description),
  Command.withSubcommands(subcommands)
)
