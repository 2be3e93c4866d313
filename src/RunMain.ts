/**
 * Process entry of `planckclaw run` (dist/cli/run.cjs): the command line
 * holding only `run` (RunCommand.ts), so this bundle leaves out the other
 * commands' code (serve's HTTP server, the cluster, SQL, the doctor, init,
 * the memory commands) and a start reads, hashes and loads less.
 * bin/planckclaw picks it for a `run` when bin.ts would parse with `runOnly`.
 */
import * as Option from "effect/Option"
import { answer, start } from "./Main.js"
import { plainRunOptions, runOnly, runWith } from "./RunCommand.js"
import * as StackTraces from "./StackTraces.js"

// The modules have loaded: stack traces formatted as usual from here on.
StackTraces.restore()

// A plain `run` line (the usual one) skips @effect/cli's parser; any other goes through it.
start(answer(runOnly, Option.getOrUndefined(Option.map(plainRunOptions(process.argv.slice(2)), runWith))))
