/**
 * Process entry: runs the command line under NodeRuntime.runMain, so SIGINT,
 * SIGTERM and SIGHUP interrupt the main fiber and every scope is closed.
 */
import * as fs from "node:fs"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { cli } from "./Cli.js"
import * as ConfigErrors from "./config/ConfigErrors.js"
import * as Logging from "./Logging.js"

/** The version in package.json, found from wherever this module was built to (dist/ or dist/cli/). */
const version = (() => {
  for (let dir = new URL(".", import.meta.url); dir.pathname !== "/"; dir = new URL("..", dir)) {
    const file = new URL("package.json", dir)
    if (fs.existsSync(file)) return (JSON.parse(fs.readFileSync(file, "utf8")) as { version: string }).version
  }
  return "unknown"
})()

/** An expected failure: one line on stderr, and the exit code. */
const refuse = (code: number, message: string): Effect.Effect<number> =>
  Effect.as(Console.error(`planckclaw: ${message}`), code)

/**
 * Expected failures print one line and pick the exit code: 2 for what the
 * settings or flags must change, 1 for the state of the machine (a directory
 * in use, a run that is gone, a failed compaction, an address already
 * taken). Anything else is a bug and shows its cause; an interruption
 * (Ctrl-C, SIGTERM) is a clean stop.
 */
const main = cli(version)(process.argv).pipe(
  Effect.as(0),
  // @effect/cli has printed the usage problem already.
  Effect.catchIf(ValidationError.isValidationError, () => Effect.succeed(2)),
  Effect.catchIf(ConfigError.isConfigError, (error) => refuse(2, ConfigErrors.describe(error))),
  Effect.catchTags({
    MissingSetting: (error) => refuse(2, error.message),
    ConfigFileError: (error) => refuse(2, error.message),
    DiscordRefused: (error) => refuse(error.reason === "unreachable" ? 1 : 2, error.message),
    BridgeChoiceError: (error) => refuse(2, error.message),
    ExternalBridgeError: (error) => refuse(2, error.message),
    RuntimeDirError: (error) => refuse(1, error.message),
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
    ClusterStartError: (error) => refuse(1, error.message),
  }),
  Effect.provide(NodeContext.layer),
  Effect.provide(Logging.layer(false)),
  Effect.catchAllCause((cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.succeed(0)
      : Effect.as(Console.error(`planckclaw: unexpected failure\n${Cause.pretty(cause)}`), 1)
  )
)

// A closed terminal (SIGHUP) stops a run like Ctrl-C: the runtime interrupts
// the main fiber on SIGINT and SIGTERM only, so HUP is passed on as TERM.
process.on("SIGHUP", () => process.kill(process.pid, "SIGTERM"))

NodeRuntime.runMain(main, {
  disableErrorReporting: true,
  // Logs go to stderr through our own logger; the pretty one writes to stdout.
  disablePrettyLogger: true,
  // Exit explicitly: an idle keep-alive socket or stdin handle must not keep
  // a finished run alive.
  teardown: (exit: Exit.Exit<unknown, unknown>, onExit) => {
    // Ctrl-C or SIGTERM is the ordinary way to stop a run: a clean exit.
    const code = Exit.isSuccess(exit)
      ? typeof exit.value === "number" ? exit.value : 0
      : Cause.isInterruptedOnly(exit.cause) ? 0 : 1
    onExit(code)
    process.exit(code)
  }
})
