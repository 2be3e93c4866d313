/**
 * Help and --version come first: both entries (bin.ts through CliAnswer,
 * RunMain.ts) answer them before a command line is parsed. Apart from Main,
 * which runs the command line and picks its exit code, so that CliAnswer and
 * Main do not import each other.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { packageVersion } from "../config/PackageRoot.js"
import * as HelpText from "./HelpText.js"
import * as PlainConsole from "./PlainConsole.js"

export const version = packageVersion()

const args = process.argv.slice(2)

/**
 * Help and --version, answered before the command line is parsed (see
 * HelpText), `known` being the command names; else `program`, the command
 * line's parse and the command it chose (CliAnswer, with effect/cli) or a
 * command line read without it (RunProgram.plainRunOptions), whose exit code
 * it gives.
 */
export const answerWith = <R, E>(known: ReadonlyArray<string>, program: Effect.Effect<number, E, R>) => {
  const help = HelpText.answer(args, { version, color: HelpText.colorAllowed(process.stdout), known })
  return help._tag === "Print"
    ? Effect.as((help.toStderr === true ? Console.error : Console.log)(help.text), help.code)
    : Console.consoleWith((console) => Effect.provideService(program, Console.Console, PlainConsole.make(console)))
}
