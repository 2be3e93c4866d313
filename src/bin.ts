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
import * as Option from "effect/Option"
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

/** Expected failures print one line and pick the exit code; anything else is a bug and shows its cause. */
const report = (cause: Cause.Cause<unknown>): Effect.Effect<number> => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (ValidationError.isValidationError(error)) return Effect.succeed(2)
    if (ConfigError.isConfigError(error)) return Console.error(`planckclaw: ${ConfigErrors.describe(error)}`).pipe(Effect.as(2))
    if (typeof error === "object" && error !== null && "_tag" in error && error._tag === "StartupError") {
      const startup = error as unknown as { message: string; exitCode: number }
      return Console.error(`planckclaw: ${startup.message}`).pipe(Effect.as(startup.exitCode))
    }
  }
  if (Cause.isInterruptedOnly(cause)) return Effect.succeed(0)
  return Console.error(`planckclaw: unexpected failure\n${Cause.pretty(cause)}`).pipe(Effect.as(1))
}

const main = cli(version)(process.argv).pipe(
  Effect.provide(NodeContext.layer),
  Effect.provide(Logging.layer(false)),
  Effect.exit,
  Effect.flatMap((exit) => Exit.isSuccess(exit) ? Effect.succeed(0) : report(exit.cause))
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
