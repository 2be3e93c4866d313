/**
 * Kept beside the one command tree (Cli.ts) because the cold-start row needs
 * it: with every `run` line parsed by that tree in one bundle, cold start to
 * the prompt was 389 ms against 203 ms (× 1.70 of `node -e 0`'s ratio, range
 * 1.47-1.92, 2 rounds of 8, Node 24.22, 2-core VM; target 250 ms), and with a
 * run-only effect/cli tree still 311 ms (× 1.25). bench/compare.mjs cold-start.
 *
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
import * as Option from "effect/Option"
import { start } from "./Main.js"
import { plainRunOptions, runWith } from "./commands/RunProgram.js"
import * as StackTraces from "../runtime/StackTraces.js"
import { mcpConfigPresent } from "../claws/mcp/McpPresence.js"

// The modules have loaded: stack traces formatted as usual from here on.
StackTraces.restore()

// The same choice as bin/planckclaw's (code-cache.cjs's forRunBundle): the Discord bridge is not in this bundle,
// nor the MCP client (build/bundle.mjs): a home with an mcp.json is run from bin.cjs.
const plain = Option.filter(
  plainRunOptions(process.argv.slice(2)),
  (options) => options.bridge !== "discord" && !mcpConfigPresent()
)

// A plain line holds no --help (bin/planckclaw answers that): the run itself, its exit code Main's.
if (Option.isSome(plain)) start(runWith(plain.value))

/** Whether this bundle started the run (a plain line); if not, bin/planckclaw runs the whole command line. */
export const started: boolean = Option.isSome(plain)
