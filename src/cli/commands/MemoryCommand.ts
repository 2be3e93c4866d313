/**
 * `planckclaw memory export --agent ID DIR` and `planckclaw memory import
 * --agent ID DIR [--replace]`: move an agent's memory between the files
 * format (history.jsonl, summary.md, soul.md, usage.jsonl in DIR) and the
 * PostgreSQL of PLANCKCLAW_DATABASE_URL, exactly (memory/sql/SqlTransfer.ts).
 */
import * as path from "node:path"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { withSettings } from "../CliSettings.js"
import type * as SqlTransfer from "../../memory/sql/SqlTransfer.js"
import * as AgentId from "../../hosts/serve/AgentId.js"

const agentOption = Flag.String("agent").pipe(Flag.withDescription("the agent's id (as `planckclaw serve` names it)"))
// Text, not Argument.Directory: the command says what is wrong with the path itself (a path through a file, say).
const directoryArg = Argument.String("DIR").pipe(
  Argument.withDescription("the directory of the agent's memory files")
)

const described = (report: SqlTransfer.TransferReport) =>
  [
    `${report.lines} history line(s)`,
    report.summary ? "the summary" : "no summary",
    ...(report.soul ? ["soul.md"] : []),
    ...(report.usage > 0 ? [`${report.usage} usage line(s)`] : []),
    ...(report.usageSkipped !== undefined && report.usageSkipped > 0
      ? [`${report.usageSkipped} usage line(s) left out (torn, or not a usage line)`]
      : [])
  ].join(", ")

/** The PostgreSQL client is loaded only by these commands: every other command starts without it. */
const sqlModules = Effect.promise(() =>
  Promise.all([import("../../memory/sql/SqlDatabase.js"), import("../../memory/sql/SqlTransfer.js")])
)

/** The agent's id checked before anything connects, then `run` on the database. */
const inDatabase = <A, E, R>(
  agent: string,
  run: (id: AgentId.AgentId, transfer: typeof SqlTransfer) => Effect.Effect<A, E, R>
) =>
  Effect.flatMap(Effect.fromResult(AgentId.parse(agent)), (id) =>
    Effect.flatMap(sqlModules, ([database, transfer]) =>
      run(id, transfer).pipe(Effect.provide(database.layer), withSettings(new Map()))))

const exportCommand = Command.make("export", { agent: agentOption, directory: directoryArg }, (options) =>
  inDatabase(options.agent, (id, transfer) => Effect.gen(function*() {
    const directory = path.resolve(options.directory)
    const report = yield* transfer.exportAgent(id, directory)
    yield* Console.log(`exported agent ${id} to ${directory}: ${described(report)}`)
  }))).pipe(Command.withDescription("Write an agent's memory from the database into DIR (which must hold no memory files)."))

const importCommand = Command.make("import", {
  agent: agentOption,
  directory: directoryArg,
  replace: Flag.Boolean("replace").pipe(
    Flag.withoutNegation,
    Flag.withDefault(false),
    Flag.withDescription("overwrite the memory the agent already has in the database")
  )
}, (options) =>
  inDatabase(options.agent, (id, transfer) => Effect.gen(function*() {
    const directory = path.resolve(options.directory)
    const report = yield* transfer.importAgent(id, directory, { replace: options.replace })
    yield* Console.log(`imported agent ${id} from ${directory}: ${described(report)}`)
  }))).pipe(Command.withDescription("Load an agent's memory files from DIR into the database, in one transaction."))

export const memory = Command.make("memory").pipe(
  Command.withDescription("Move an agent's memory between files and PostgreSQL (PLANCKCLAW_DATABASE_URL)."),
  Command.withSubcommands([exportCommand, importCommand])
)
