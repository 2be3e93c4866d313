/**
 * What every command shares: the settings (the home's config.env, the
 * environment and flags, read once through the ConfigProvider, with the
 * secrets withdrawn first). The flags themselves are in CliFlags, apart, so a
 * plain `run` line (RunProgram) loads no effect/cli.
 */
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as References from "effect/References"
import { AgentConfig } from "../config/AgentConfig.js"
import { BrainChoiceConfig } from "../config/BrainChoice.js"
import * as BrainRetry from "../brain/BrainRetry.js"
import * as ScriptClaws from "../claws/ScriptClaws.js"
import { fifoPathsConfig } from "../pipes/FifoPaths.js"
import * as HelpText from "./HelpText.js"
import * as Home from "../config/Home.js"
import { MemoryConfig } from "../memory/MemoryDir.js"
import * as PlainConsole from "./PlainConsole.js"
import { HostConfig } from "../hosts/serve/AgentHost.js"
import * as ConfigFile from "../config/ConfigFile.js"
import * as Secrets from "../config/Secrets.js"
import * as AllSettings from "../config/settings/All.js"
import { Debug } from "../config/settings/Agent.js"
import * as BrainSettings from "../config/settings/Brain.js"
import * as Logging from "../runtime/Logging.js"

/**
 * Every setting that has a default, checked before a command does anything:
 * a bad value stops it at start-up, whatever its input (even an empty
 * stdin), naming the key. Secrets and the Discord settings are checked when
 * a chosen bridge uses them.
 */
export const StartupConfig = Config.all([
  AgentConfig,
  ScriptClaws.ScriptsConfig,
  BrainRetry.BrainRetryConfig,
  BrainRetry.baseUrlConfig(BrainSettings.AnthropicBaseUrl),
  BrainRetry.baseUrlConfig(BrainSettings.OpenAiBaseUrl),
  BrainChoiceConfig,
  Logging.DebugConfig,
  MemoryConfig,
  HostConfig,
  fifoPathsConfig
])

const knownKeys: ReadonlySet<string> = new Set(AllSettings.all.map((setting) => setting.key))
const environmentOnlyKeys: ReadonlySet<string> = new Set(
  AllSettings.all.flatMap((setting) => setting.environmentOnly === true ? [setting.key] : [])
)
const ourPrefix = /^(PLANCKCLAW_|HISTORY_|CLAWS_|ANTHROPIC_|OPENAI_|DISCORD_)/

/**
 * A key of ours config.env sets that nothing reads: a typo, most likely,
 * named with the known key it is closest to, or a key read from the
 * environment only (PLANCKCLAW_HOME, which finds config.env). Other names
 * are the user's own variables (for `$VAR`), left alone.
 */
export const unknownKeys = (file: ReadonlyMap<string, string>): Array<string> =>
  [...file.keys()].filter((key) => !knownKeys.has(key) || environmentOnlyKeys.has(key)).flatMap((key) => {
    if (environmentOnlyKeys.has(key)) return [`${key} (read from the environment only, before config.env is found)`]
    const closest = [...knownKeys].sort((a, b) => HelpText.distance(key, a) - HelpText.distance(key, b))[0]!
    const near = HelpText.distance(key, closest) <= 3
    return near ? [`${key} (did you mean ${closest}?)`] : ourPrefix.test(key) ? [key] : []
  })

export interface Settings {
  readonly home: Home.Home
  readonly provider: ConfigProvider.ConfigProvider
  /** Why the secrets could not be wiped from the start-up environment block, if they could not. */
  readonly notWiped: string | undefined
  /** Keys of config.env nothing reads (see unknownKeys). */
  readonly unknown: ReadonlyArray<string>
}

/**
 * The settings of this process: the home's config.env (its relative paths
 * made absolute against the home), the environment and `flags`, with the
 * memory, claws and agents directories inside the home unless set. The
 * secrets leave the process's environment first (see Secrets.withdraw),
 * before anything is started that could read it.
 */
export const settings = (flags: Map<string, string>): Effect.Effect<Settings, ConfigFile.ConfigFileError> =>
  Effect.gen(function*() {
    const home = Home.locate()
    const values = yield* ConfigFile.read(Home.configFile(home))
    const file = Home.resolveFilePaths(home, values)
    const withdrawn = yield* Secrets.withdraw(Secrets.secretNames.flatMap((name) => file.get(name) ?? []))
    const provider = ConfigFile.provider({
      file,
      environment: process.env,
      withdrawnSecrets: withdrawn.secrets,
      flags,
      defaults: Home.directoryDefaults(home)
    })
    return { home, provider, notWiped: withdrawn.notWiped, unknown: unknownKeys(values) }
  })

/**
 * The line a start of `run` or `serve` says which home is in use and why
 * (and, for a run, where its pipes are): shown at an interactive start of
 * serve (standard input and error on a terminal), a debug line otherwise, so
 * scripts and pipes see nothing new. An interactive run says its home in its
 * start line (StartLine), with the brain, model and tools.
 */
const announce = (home: Home.Home, runDir: string | undefined): Effect.Effect<void> => {
  const line = `home ${home.dir} (${Home.why(home)})${runDir === undefined ? "" : `; its pipes in ${runDir}`}`
  return runDir === undefined && process.stdin.isTTY === true && process.stderr.isTTY === true
    ? Effect.logInfo(line)
    : Effect.logDebug(line)
}

/**
 * Runs a command with its settings (see `settings`), checked at start-up
 * (StartupConfig), and logging set up: `--log-level` chooses the level,
 * `--debug` or PLANCKCLAW_DEBUG=1 lowers it to debug at least. `start`:
 * the command is `run` (which lays out pipes) or `serve`, whose start says
 * which home is in use (see announce).
 */
export const withSettings = (flags: Map<string, string>, start?: "run" | "serve") => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const { home, notWiped, provider, unknown } = yield* settings(flags)
    yield* Effect.provideService(StartupConfig, ConfigProvider.ConfigProvider, provider)
    const debug = yield* Logging.DebugConfig.pipe(Effect.provideService(ConfigProvider.ConfigProvider, provider))
    // effect/cli's --log-level sets the minimum level around the handler; the default is info (Main).
    const chosen = yield* References.MinimumLogLevel
    const level: LogLevel.LogLevel = debug && LogLevel.isGreaterThan(chosen, "Debug") ? "Debug" : chosen
    const warning = Effect.andThen(
      notWiped === undefined ? Effect.void : Effect.logWarning(
        `cannot wipe the secrets from this process's start-up environment (${notWiped}): processes of this ` +
          "user, claws included, can read them in /proc; put them in config.env rather than the environment"
      ),
      Effect.andThen(
        unknown.length === 0 ? Effect.void : Effect.logWarning(
          `${Home.configFile(home)} sets ${unknown.join(", ")}, which nothing reads: \`planckclaw help config\` lists every key`
        ),
        home.passedOver === undefined ? Effect.void : Effect.logWarning(Home.passedOverText(home.passedOver))
      )
    )
    const runDir = start === "run" ? (yield* Effect.provideService(fifoPathsConfig, ConfigProvider.ConfigProvider, provider)).runDir : undefined
    const started = start === undefined ? Effect.void : announce(home, runDir)
    // The command's own output as it is (see PlainConsole).
    const console = PlainConsole.original(yield* Console.Console)
    return yield* Effect.andThen(Effect.andThen(warning, started), effect).pipe(
      Effect.provideService(References.MinimumLogLevel, level),
      Effect.provideService(Console.Console, console),
      Effect.provideService(ConfigProvider.ConfigProvider, provider),
      Effect.provide(Logging.layer(debug))
    )
  })

export const debugFlags = (debug: boolean) => new Map(debug ? [[Debug.key, "1"]] : [])

/** `--model` as a setting: it overrides PLANCKCLAW_MODEL. */
export const modelFlags = (model: Option.Option<string> | undefined) =>
  Option.toArray(model ?? Option.none()).map((name) => [BrainSettings.Model.key, name] as const)

/** `run`'s and `serve`'s flags as settings: `--brain` overrides PLANCKCLAW_BRAIN, `--model` PLANCKCLAW_MODEL. */
export const runFlags = (
  options: { readonly debug: boolean; readonly brain: Option.Option<string>; readonly model?: Option.Option<string> }
) =>
  new Map([
    ...debugFlags(options.debug),
    ...Option.toArray(options.brain).map((brain) => [BrainSettings.BrainChoice.key, brain] as const),
    ...modelFlags(options.model)
  ])
