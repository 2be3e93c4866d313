/**
 * Process entry of the command line (dist/cli/bin.cjs): one Effect program,
 * effect/cli's parse of every line with the whole command tree (Cli.ts) and
 * the command it chose, its exit code decided by Main.
 */
import { command } from "./Cli.js"
import { parseAndRun } from "./CliAnswer.js"
import { start } from "./Main.js"
import * as StackTraces from "../runtime/StackTraces.js"

// The modules have loaded: stack traces formatted as usual from here on.
StackTraces.restore()

start(parseAndRun(command))
