/**
 * The command line: `planckclaw run | compact | tools`. Layers are composed
 * here, at the edge, from the choices the flags make.
 */
import * as path from "node:path"
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Bridges from "./Bridges.js"
import * as ScriptClaws from "./claws/ScriptClaws.js"
import * as Compaction from "./memory/Compactor.js"
import * as ConfigFile from "./config/ConfigFile.js"
import * as Logging from "./Logging.js"
import * as Memory from "./memory/Memory.js"
import * as FileLock from "./memory/FileLock.js"
import * as Secrets from "./config/Secrets.js"
import { StartupError } from "./StartupError.js"

const bridgeOption = Options.text("bridge").pipe(
  Options.withDefault("cli"),
  Options.withDescription(
    "interact bridge: cli (terminal), discord, none (nothing serves the interact pipes) or a path to an executable"
  )
)
const brainOption = Options.text("brain").pipe(
  Options.withDefault("anthropic"),
  Options.withDescription("brain bridge: anthropic, none (an outside process serves the brain pipes) or an executable")
)
const clawOption = Options.text("claw").pipe(
  Options.withDefault("scripts"),
  Options.withDescription("claw bridge: scripts (CLAWS_DIR/*.sh), none (served from outside) or an executable")
)
const debugOption = Options.boolean("debug").pipe(
  Options.withDescription("print brain payloads and HTTP statuses to stderr (same as PLANCKCLAW_DEBUG=1)")
)

/**
 * Reads config.env, the environment and flags into the ConfigProvider, and
 * sets up logging. The secrets leave the process's environment first (see
 * Secrets.withdraw), before anything is started that could read it.
 */
const withSettings = (flags: Map<string, string>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const file = yield* ConfigFile.read(path.resolve("config.env"))
    const withdrawn = yield* Secrets.withdraw(Secrets.secretNames.flatMap((name) => file.get(name) ?? []))
    const provider = ConfigFile.provider({ file, environment: process.env, withdrawnSecrets: withdrawn.secrets, flags })
    const debug = yield* Logging.DebugConfig.pipe(Effect.withConfigProvider(provider))
    const warning = withdrawn.notWiped === undefined ? Effect.void : Effect.logWarning(
      `cannot wipe the secrets from this process's start-up environment (${withdrawn.notWiped}): processes of this ` +
        "user, claws included, can read them in /proc; put them in config.env rather than the environment"
    )
    return yield* Effect.zipRight(warning, effect).pipe(
      Effect.withConfigProvider(provider),
      Effect.provide(Logging.layer(debug))
    )
  })

const debugFlags = (debug: boolean) => new Map(debug ? [["PLANCKCLAW_DEBUG", "1"]] : [])

/** The memory directory, checked and held by this run for its whole life. */
const holdMemory = Effect.gen(function*() {
  const directory = yield* Memory.MemoryConfig
  yield* Memory.ensureWritable(directory).pipe(
    Effect.mapError((error) => new StartupError({ exitCode: 1, message: error.message }))
  )
  yield* FileLock.hold(path.join(directory, ".planckclaw-run.lock")).pipe(
    Effect.mapError((error) =>
      new StartupError({
        exitCode: 1,
        message: error._tag === "LockHeld"
          ? `another planckclaw run (pid ${error.ownerPid}) is using the memory directory ${directory}`
          : `cannot use the memory directory ${directory}: ${error.message}`
      })
    )
  )
})

const run = Command.make(
  "run",
  { bridge: bridgeOption, brain: brainOption, claw: clawOption, debug: debugOption },
  (options) =>
    Effect.gen(function*() {
      const choices: Bridges.RunChoices = {
        bridge: yield* Bridges.choose("bridge", options.bridge, ["cli", "discord"] as const),
        brain: yield* Bridges.choose("brain", options.brain, ["anthropic"] as const),
        claw: yield* Bridges.choose("claw", options.claw, ["scripts"] as const)
      }
      yield* holdMemory
      yield* Bridges.run(choices)
    }).pipe(Effect.scoped, withSettings(debugFlags(options.debug)))
).pipe(Command.withDescription("Run the agent: answer messages from the chosen bridge until its input ends."))

const compact = Command.make(
  "compact",
  { debug: debugOption },
  (options) =>
    Effect.gen(function*() {
      // Compaction runs on its own, without the pipes: it talks to the API directly.
      const layer = Compaction.layer.pipe(
        Layer.provideMerge(Memory.layer),
        Layer.provide(Bridges.brainLayers.anthropic)
      )
      // The compactor is used inside the layer's scope: its HTTP client lives as long as that.
      const report = yield* Effect.flatMap(Compaction.Compactor, (compactor) => compactor.compactNow).pipe(
        Effect.provide(layer),
        Effect.catchTags({
          CompactionBusy: (busy) =>
            new StartupError({ exitCode: 1, message: `another compaction is running (pid ${busy.ownerPid}); nothing done` }),
          CompactionFailed: (failure) =>
            new StartupError({ exitCode: 1, message: `compaction failed, memory unchanged: ${failure.message}` }),
          MemoryError: (failure) => new StartupError({ exitCode: 1, message: `compaction failed: ${failure.message}` })
        })
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
    }).pipe(withSettings(debugFlags(options.debug)))
).pipe(Command.withDescription("Fold old history into summary.md now (safe while a run is active)."))

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

const bridge = Command.make(
  "bridge",
  { name: Args.choice([["cli", "cli"], ["discord", "discord"], ["anthropic", "anthropic"], ["scripts", "scripts"]] as const) },
  ({ name }) => Bridges.bridge(name).pipe(Effect.scoped, withSettings(new Map()))
).pipe(
  Command.withDescription(
    "Serve one built-in bridge on the FIFOs of a running agent (PLANCKCLAW_RUN_DIR), as its own process."
  )
)

export const command = Command.make("planckclaw").pipe(
  Command.withDescription("A personal AI agent: terminal or Discord, Claude, shell-script claws, self-compacting memory."),
  Command.withSubcommands([run, compact, tools, bridge])
)

export const cli = (version: string) => Command.run(command, { name: "planckclaw", version })
