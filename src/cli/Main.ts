/**
 * The command line's process (bin.ts: effect/cli's parse and the command it
 * chose, CliAnswer; RunMain.ts: a plain `run` line) run under NodeRuntime.runMain, so SIGINT, SIGTERM and
 * SIGHUP interrupt the main fiber and every scope is closed. The exit code
 * is decided here and nowhere else in the bundle: 0 for a command that
 * ended (or a help printed), 2 for a usage mistake, 3 for a piped run in
 * which a reply said the brain could not answer, and for every expected
 * failure one line and its code (bin/planckclaw decides those of the
 * answers it gives without the bundle: --version alone and the help).
 */
import * as fs from "node:fs"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { CommandLine } from "./CliAnswer.js"
import * as ConfigErrors from "../config/ConfigErrors.js"
import * as Home from "../config/Home.js"
import * as Logging from "../runtime/Logging.js"
import * as SpawnHelper from "../runtime/process/SpawnHelper.js"

export type { CommandLine } from "./CliAnswer.js"

/** An expected failure: one line on stderr, and the exit code. */
const refuse = (code: number, message: string): Effect.Effect<number> =>
  Effect.as(Console.error(`planckclaw: ${message}`), code)

/** A setting to add: the line says which file to add it to. */
const refuseSetting = (message: string): Effect.Effect<number> => {
  const home = Home.locate()
  const there = fs.existsSync(Home.configFile(home))
  return refuse(2, `${message} [settings file: ${Home.describe(home)}${there ? "" : "; not there yet: `planckclaw init` makes it"}]`)
}

/**
 * Expected failures print one line and pick the exit code: 2 for what the
 * settings or flags must change, 1 for the state of the machine (a directory
 * in use, a run that is gone, a failed compaction, an address already
 * taken). Anything else is a bug and shows its cause; an interruption
 * (Ctrl-C, SIGTERM) is a clean stop.
 */
const main = (commandLine: CommandLine) => commandLine.pipe(
  Effect.as(0),
  // effect/cli has printed the help asked for (0) or the usage mistake (2: see CliAnswer.presenter).
  Effect.catchTag("ShowHelp", (shown) => Effect.succeed(shown.errors.length === 0 ? 0 : 2)),
  Effect.catchIf(
    (error): error is Config.ConfigError => error instanceof Config.ConfigError,
    (error) => refuse(2, ConfigErrors.describe(error))
  ),
  Effect.catchTags({
    MissingSetting: (error) => refuseSetting(error.message),
    InitError: (error) => refuse(1, `init: ${error.message}`),
    ConfigFileError: (error) => refuse(2, error.message),
    DiscordRefused: (error) => refuse(error.reason === "unreachable" ? 1 : 2, error.message),
    // A bridge that stopped for good after start-up: a Discord refusal (a revoked token) is for the settings.
    InteractError: (error) =>
      refuse((error.cause as { readonly _tag?: unknown } | undefined)?._tag === "DiscordRefused" ? 2 : 1, error.message),
    BridgeChoiceError: (error) => refuse(2, error.message),
    ExternalBridgeError: (error) => refuse(2, error.message),
    RuntimeDirError: (error) => refuse(1, error.message),
    FifoError: (error) => refuse(1, error.message),
    MemoryInUse: (error) => refuse(1, error.message),
    MemoryLockFailed: (error) => refuse(1, error.message),
    MemoryError: (error) => refuse(1, error.message),
    NoRunningAgent: (error) => refuse(1, error.message),
    CompactionBusy: (busy) => refuse(1, `another compaction is running (pid ${busy.ownerPid}); nothing done`),
    CompactionFailed: (failure) => refuse(1, `compaction failed, memory unchanged: ${failure.message}`),
    PricesError: (error) => refuse(2, error.message),
    UsageSinceError: (error) => refuse(2, error.message),
    AgentIdRefused: (error) => refuse(2, error.message),
    ListenFlagError: (error) => refuse(2, error.message),
    HttpListenRefused: (error) => refuse(2, error.message),
    // The HTTP server could not listen (an address in use, one this machine does not have).
    ServeError: (error) => refuse(1, `cannot start the HTTP API: ${error.cause instanceof Error ? error.cause.message : String(error.cause)}`),
    HostError: (error) => refuse(1, error.message),
    // Each failed check has printed its line already.
    DoctorFailed: (error) => refuse(1, error.message),
    ClusterStartError: (error) => refuse(1, error.message),
    HelpTopicUnknown: (error) => refuse(2, error.message),
    // A piped run answered everything it could; some replies said the brain could not answer.
    UnansweredMessages: (error) => refuse(3, error.message),
    // A schedule request or file refused is the user's to fix (2); the disk's failure is the machine's (1).
    ScheduleError: (error) => refuse(error.reason === "Io" ? 1 : 2, error.message),
  }),
  // The spawn helper and the watchdog of the command's processes, ended with it (started at their first use).
  Effect.provide(SpawnHelper.layer),
  Effect.provide(Logging.layer(false)),
  Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.succeed(0)
      : Effect.as(Console.error(`planckclaw: unexpected failure\n${Cause.pretty(cause)}`), 1)
  )
)

/** Runs `commandLine` (effect/cli's parse and the command it chose, or a plain run) as the process. */
export const start = (commandLine: CommandLine): void => {
  // A closed terminal (SIGHUP) stops a run like Ctrl-C: the runtime interrupts
  // the main fiber on SIGINT and SIGTERM only, so HUP is passed on as TERM.
  process.on("SIGHUP", () => process.kill(process.pid, "SIGTERM"))

  // Logs go to stderr through our own logger (Logging.layer, provided in main).
  NodeRuntime.runMain(main(commandLine), {
    disableErrorReporting: true,
    // Exit explicitly: an idle keep-alive socket or stdin handle must not keep
    // a finished run alive.
    teardown: (exit: Exit.Exit<unknown, unknown>, onExit) => {
      // Ctrl-C or SIGTERM is the ordinary way to stop a run: a clean exit.
      const code = Exit.isSuccess(exit)
        ? typeof exit.value === "number" ? exit.value : 0
        : Cause.hasInterruptsOnly(exit.cause) ? 0 : 1
      onExit(code)
      process.exit(code)
    }
  })
}
