/**
 * Process entry of `planckclaw run` (dist/cli/run.cjs) for a plain `run`
 * line (the usual one, see RunProgram.plainRunOptions), read without
 * effect/cli: this bundle leaves out effect/cli, the Discord bridge
 * (build/bundle.mjs) and the other commands' code (serve's HTTP server, the
 * cluster, SQL, the doctor, init, the memory commands), so a start reads and
 * evaluates less. bin/planckclaw sends any other line, and `run --bridge
 * discord`, to the whole command line (dist/cli/bin.cjs, which parses a
 * `run` with RunCommand.runOnly); should one reach this bundle anyway, it
 * starts nothing and says so (`started`), and bin/planckclaw hands it on.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { answerWith } from "./HelpFirst.js"
import { start } from "./Main.js"
import { plainRunOptions, runWith } from "./commands/RunProgram.js"
import * as StackTraces from "../runtime/StackTraces.js"

// The modules have loaded: stack traces formatted as usual from here on.
StackTraces.restore()

// The same choice as bin/planckclaw's (code-cache.cjs's forRunBundle): the Discord bridge is not in this bundle.
const plain = Option.filter(plainRunOptions(process.argv.slice(2)), (options) => options.bridge !== "discord")

// `run` is the only command this bundle knows: what its help would know.
if (Option.isSome(plain)) start(answerWith(["run"], Effect.as(runWith(plain.value), 0)))

/** Whether this bundle started the run (a plain line); if not, bin/planckclaw runs the whole command line. */
export const started: boolean = Option.isSome(plain)
