import * as path from "node:path"
import * as Flag from "effect/cli/Flag"
import * as Command from "effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as AgentStatus from "../../hosts/serve/AgentStatus.js"
import * as Memory from "../../memory/Memory.js"
import * as Prices from "../../usage/Prices.js"
import * as UsageLedger from "../../usage/UsageLedger.js"
import * as UsageReport from "../../usage/UsageReport.js"
import { withSettings } from "../CliSettings.js"
import * as HelpText from "../HelpText.js"

/** The memory directory, or with `--agent ID` that agent's directory under PLANCKCLAW_AGENTS_DIR (as `serve` keeps it). */
const ledgerDirectory = (agent: Option.Option<string>) =>
  Option.match(agent, {
    onNone: () => Memory.MemoryConfig,
    onSome: (raw) => Effect.map(AgentStatus.existingAgent(raw), (agent) => agent.directory)
  })

/**
 * `planckclaw usage`: the usage ledger summed per day and model, with an
 * estimated cost; reads only, so it is safe while a run is active.
 */
export const usage = Command.make(
  "usage",
  {
    since: Flag.String("since").pipe(Flag.optional, Flag.withDescription(HelpText.describe("usage", "--since"))),
    until: Flag.String("until").pipe(Flag.optional, Flag.withDescription(HelpText.describe("usage", "--until"))),
    agent: Flag.String("agent").pipe(Flag.optional, Flag.withDescription(HelpText.describe("usage", "--agent"))),
    json: Flag.Boolean("json").pipe(Flag.withoutNegation, Flag.withDefault(false), Flag.withDescription(HelpText.describe("usage", "--json")))
  },
  (options) =>
    Effect.gen(function*() {
      const since = Option.isSome(options.since) ? yield* Effect.fromResult(UsageReport.parseSince(options.since.value)) : undefined
      const until = Option.isSome(options.until) ? yield* Effect.fromResult(UsageReport.parseSince(options.until.value, "--until")) : undefined
      const backwards = UsageReport.periodProblem(since, until)
      if (backwards !== undefined) return yield* Effect.fail(new UsageReport.UsageSinceError({ reason: "invalid", message: backwards }))
      const prices = yield* Prices.PricesConfig
      const file = path.join(yield* ledgerDirectory(options.agent), UsageLedger.FILE_NAME)
      const ledger = yield* Effect.mapError(
        // With --since, only the lines from that day on are read, from the ledger's end back (months before it cost nothing).
        Effect.fromResult(since === undefined ? UsageLedger.read(file) : UsageLedger.readFromDay(file, since)),
        (error) => new Memory.MemoryError({ reason: "io", message: `cannot read ${file}: ${error.message}` })
      )
      const report = UsageReport.report(ledger.lines, ledger.skipped, prices, since, until)
      yield* Console.log(options.json ? JSON.stringify(report, null, 2) : UsageReport.render(report))
    }).pipe(withSettings(new Map()))
).pipe(Command.withDescription(HelpText.summary("usage")))

