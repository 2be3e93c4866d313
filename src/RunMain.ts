/**
 * Process entry of `planckclaw run` (dist/cli/run.cjs): the command line
 * holding only `run` (RunCommand.ts), so this bundle leaves out the other
 * commands' code (serve's HTTP server, the cluster, SQL, the doctor, init,
 * the memory commands) and a start reads, hashes and loads less.
 * bin/planckclaw picks it for a `run` when bin.ts would parse with `runOnly`.
 * A plain `run` line (the usual one, see RunProgram.plainRunOptions) runs
 * without @effect/cli: its parser and its modules are imported only for any
 * other line, so a usual start does not evaluate them.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { answerWith, type CommandLine, start } from "./Main.js"
import { plainRunOptions, runWith } from "./RunProgram.js"
import * as StackTraces from "./StackTraces.js"

// The modules have loaded: stack traces formatted as usual from here on.
StackTraces.restore()

const parsedByCli: CommandLine = Effect.flatMap(
  Effect.promise(() => Promise.all([import("./CliAnswer.js"), import("./RunCommand.js")])),
  ([cli, command]) => cli.answer(command.runOnly)
)

start(Option.match(plainRunOptions(process.argv.slice(2)), {
  // `runOnly`'s only command: what its help would know.
  onSome: (options) => answerWith(["run"], Effect.as(runWith(options), 0)),
  onNone: () => parsedByCli
}))
