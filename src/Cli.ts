/**
 * The command line: `planckclaw run | compact | tools`. Layers are composed
 * here, at the edge, from the choices the flags make.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Command, Options } from "@effect/cli"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Config, type ConfigError, Console, Effect, Layer, Option } from "effect"
import * as Agent from "./Agent.js"
import * as AnthropicBrain from "./brain/Anthropic.js"
import type { Brain } from "./Brain.js"
import type { Claws } from "./Claws.js"
import * as ScriptClaws from "./claws/Scripts.js"
import * as Compaction from "./Compaction.js"
import * as ConfigFile from "./ConfigFile.js"
import type { Interact } from "./Interact.js"
import * as TerminalInteract from "./interact/Terminal.js"
import * as Logging from "./Logging.js"
import * as Memory from "./Memory.js"
import * as FileLock from "./memory/FileLock.js"
import { StartupError } from "./StartupError.js"

const bridgeOption = Options.text("bridge").pipe(
  Options.withDefault("cli"),
  Options.withDescription("interact bridge: cli (terminal), discord, none (FIFOs only) or a path to an executable")
)
const brainOption = Options.text("brain").pipe(
  Options.withDefault("anthropic"),
  Options.withDescription("brain bridge: anthropic or a path to an executable")
)
const clawOption = Options.text("claw").pipe(
  Options.withDefault("scripts"),
  Options.withDescription("claw bridge: scripts (CLAWS_DIR/*.sh) or a path to an executable")
)
const debugOption = Options.boolean("debug").pipe(
  Options.withDescription("print brain payloads and HTTP statuses to stderr (same as PLANCKCLAW_DEBUG=1)")
)

type Choice<Name extends string> = { readonly _tag: "Builtin"; readonly name: Name } | {
  readonly _tag: "External"
  readonly path: string
}

const choose = <Name extends string>(
  role: string,
  value: string,
  builtins: ReadonlyArray<Name>
): Effect.Effect<Choice<Name>, StartupError> => {
  if ((builtins as ReadonlyArray<string>).includes(value)) return Effect.succeed({ _tag: "Builtin", name: value as Name })
  if (value.includes("/") || fs.existsSync(value)) return Effect.succeed({ _tag: "External", path: path.resolve(value) })
  return Effect.fail(
    new StartupError({
      exitCode: 2,
      message: `unknown ${role} '${value}': expected ${builtins.join(", ")} or a path to an executable`
    })
  )
}

const notYet = (what: string) =>
  new StartupError({ exitCode: 2, message: `${what} is not implemented in this version yet` })

const interactLayer = (choice: Choice<"cli" | "discord" | "none">): Effect.Effect<Layer.Layer<Interact, unknown>, StartupError> => {
  if (choice._tag === "External") return Effect.fail(notYet(`--bridge ${choice.path} (external bridge over FIFOs)`))
  switch (choice.name) {
    case "cli":
      return Effect.succeed(TerminalInteract.layer)
    case "discord":
      // discord.js is heavy to load: only a Discord run pays for it.
      return Effect.succeed(Layer.unwrapEffect(
        Effect.promise(() => import("./interact/Discord.js")).pipe(Effect.map((discord) => discord.layer))
      ))
    case "none":
      return Effect.fail(notYet("--bridge none (FIFOs only)"))
  }
}

/** What building a bridge Layer can fail with: a setting, or a start-up condition. */
type LayerFailure = ConfigError.ConfigError | StartupError

const brainLayer = (choice: Choice<"anthropic">): Effect.Effect<Layer.Layer<Brain, LayerFailure>, StartupError> =>
  choice._tag === "External"
    ? Effect.fail(notYet(`--brain ${choice.path} (external brain over FIFOs)`))
    : Effect.succeed(AnthropicBrain.layer.pipe(Layer.provide(NodeHttpClient.layerUndici)))

const clawsLayer = (choice: Choice<"scripts">): Effect.Effect<Layer.Layer<Claws, LayerFailure>, StartupError> =>
  choice._tag === "External"
    ? Effect.fail(notYet(`--claw ${choice.path} (external claws over FIFOs)`))
    : Effect.succeed(ScriptClaws.layer)

/** Reads config.env, the environment and flags into the ConfigProvider, and sets up logging. */
const withSettings = (flags: Map<string, string>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const file = yield* ConfigFile.read(path.resolve("config.env"))
    const provider = ConfigFile.provider({ file, environment: process.env, flags })
    const debug = yield* Config.boolean("PLANCKCLAW_DEBUG").pipe(
      Config.withDefault(false),
      Effect.withConfigProvider(provider)
    )
    return yield* effect.pipe(Effect.withConfigProvider(provider), Effect.provide(Logging.layer(debug)))
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

const agentLayer = (brain: Layer.Layer<Brain, LayerFailure>, claws: Layer.Layer<Claws, LayerFailure>) =>
  Agent.layerWithMemory.pipe(Layer.provide(Layer.merge(brain, claws)))

const run = Command.make(
  "run",
  { bridge: bridgeOption, brain: brainOption, claw: clawOption, debug: debugOption },
  (options) =>
    Effect.gen(function*() {
      const interact = yield* interactLayer(yield* choose("bridge", options.bridge, ["cli", "discord", "none"] as const))
      const brain = yield* brainLayer(yield* choose("brain", options.brain, ["anthropic"] as const))
      const claws = yield* clawsLayer(yield* choose("claw", options.claw, ["scripts"] as const))
      yield* holdMemory
      yield* Agent.serve.pipe(Effect.provide(Layer.merge(agentLayer(brain, claws), interact)))
    }).pipe(Effect.scoped, withSettings(debugFlags(options.debug)))
).pipe(Command.withDescription("Run the agent: answer messages from the chosen bridge until its input ends."))

const compact = Command.make(
  "compact",
  { brain: brainOption, debug: debugOption },
  (options) =>
    Effect.gen(function*() {
      const brain = yield* brainLayer(yield* choose("brain", options.brain, ["anthropic"] as const))
      const layer = Compaction.layer.pipe(Layer.provideMerge(Memory.layer), Layer.provide(brain))
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

export const command = Command.make("planckclaw").pipe(
  Command.withDescription("A personal AI agent: terminal or Discord, Claude, shell-script claws, self-compacting memory."),
  Command.withSubcommands([run, compact, tools])
)

export const cli = (version: string) => Command.run(command, { name: "planckclaw", version })
