/**
 * Process entry of `planckclaw run` (dist/cli/run.cjs): the command line
 * holding only `run` (RunCommand.ts), so this bundle leaves out the other
 * commands' code (serve's HTTP server, the cluster, SQL, the doctor, init,
 * the memory commands) and a start reads, hashes and loads less.
 * bin/planckclaw picks it for a `run` when bin.ts would parse with `runOnly`.
 */
import { answer, start } from "./Main.js"
import { runOnly } from "./RunCommand.js"

start(answer(runOnly))
