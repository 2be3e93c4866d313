/**
 * Process entry of the whole command line (dist/cli/bin.cjs): every command.
 * bin/planckclaw starts a plain `run` line from RunMain.ts's bundle instead.
 */
import * as Effect from "effect/Effect"
import { answer } from "./CliAnswer.js"
import { type CommandLine, start } from "./Main.js"
import * as StackTraces from "../runtime/StackTraces.js"

// The modules have loaded: stack traces formatted as usual from here on.
StackTraces.restore()

const args = process.argv.slice(2)

const everyCommand: CommandLine = Effect.flatMap(Effect.promise(() => import("./Cli.js")), (module) => answer(module.command))

/**
 * A `run` is parsed by a command line holding only `run`: its modules leave
 * out serve's HTTP server, the doctor, SQL and init, so a start loads less.
 * Anything else, and effect/cli's own options (`--completions`, `--wizard`),
 * which speak of every command, get the whole command line. (bin/planckclaw
 * sends a plain `run` line to the run-only bundle, dist/cli/run.cjs, instead:
 * only other `run` lines reach this one.)
 */
const runOnly = args[0] === "run" && !args.some((arg) => ["--completions", "--wizard", "--version"].includes(arg))

start(
  runOnly
    ? Effect.flatMap(Effect.promise(() => import("./commands/RunCommand.js")), (module) => answer(module.runOnly))
    : everyCommand
)
