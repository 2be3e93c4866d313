/**
 * `planckclaw doctor`: checks what a run needs, one line each with ✔ or ✘
 * and, for a failure, what to do: the home in use; the settings parse; the brain is
 * reachable, accepts the key and serves the model; the claws; with `--agent
 * ID`, that agent of serve's directory and own mcp.json; the memory
 * and runtime directories; another run holding the memory; Discord when it
 * is configured. Fails with DoctorFailed (exit 1) when any check failed.
 */
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as References from "effect/References"
import { AgentConfig } from "../../../config/AgentConfig.js"
import { BrainChoiceConfig } from "../../../config/BrainChoice.js"
import { BrainRetryConfig } from "../../../brain/BrainRetry.js"
import * as ScriptClaws from "../../../claws/ScriptClaws.js"
import { brainOption } from "../../CliFlags.js"
import { runFlags, withSettings } from "../../CliSettings.js"
import * as HelpText from "../../HelpText.js"
import * as ConfigErrors from "../../../config/ConfigErrors.js"
import { fifoPathsConfig } from "../../../pipes/FifoPaths.js"
import { DebugConfig } from "../../../runtime/Logging.js"
import { MemoryConfig } from "../../../memory/MemoryDir.js"
import * as AgentCheck from "./AgentCheck.js"
import * as BrainCheck from "./BrainCheck.js"
import * as ClawsCheck from "./ClawsCheck.js"
import * as DirectoryCheck from "./DirectoryCheck.js"
import * as DiscordCheck from "./DiscordCheck.js"
import * as McpCheck from "./McpCheck.js"
import { colourWanted, DoctorFailed, fail, type Finding, pass, render } from "./DoctorCheck.js"

/** The settings every run reads, whatever its bridges; each bridge's own are checked on its line. */
const commonSettings: ReadonlyArray<Config.Config<unknown>> = [
  AgentConfig,
  MemoryConfig,
  fifoPathsConfig,
  ScriptClaws.ScriptsConfig,
  BrainChoiceConfig,
  BrainRetryConfig,
  DebugConfig
]

const configuration: Effect.Effect<ReadonlyArray<Finding>> = Effect.map(
  Effect.forEach(commonSettings, (config) => Effect.result(config)),
  (results) => {
    const problems = [
      ...new Set(results.flatMap((result) =>
        result._tag === "Failure" ? [ConfigErrors.describe(result.failure).replace(/^configuration error: /, "")] : []
      ))
    ]
    return problems.length === 0
      ? [pass("configuration", "config.env and the environment parse")]
      : problems.map((problem) => fail("configuration", problem, "fix that setting in config.env or the environment"))
  }
)

/** Every check in order, each printed as soon as it is known; with `agent`, that agent of serve's after the home's MCP servers. */
export const checks = (agent: string | undefined): ReadonlyArray<Effect.Effect<ReadonlyArray<Finding>>> => [
  DirectoryCheck.home,
  configuration,
  Effect.provide(BrainCheck.check, FetchHttpClient.layer),
  ClawsCheck.check,
  McpCheck.check,
  ...(agent === undefined ? [] : [AgentCheck.check(agent)]),
  DirectoryCheck.memory,
  DirectoryCheck.runtime,
  Effect.provide(DiscordCheck.check, FetchHttpClient.layer)
]

const tally = (findings: ReadonlyArray<Finding>): Effect.Effect<void, DoctorFailed> => {
  const failed = findings.filter((finding) => finding.status === "fail").length
  return failed === 0 ? Effect.void : Effect.fail(
    new DoctorFailed({
      failed,
      total: findings.length,
      message: `${failed} of ${findings.length} checks failed`
    })
  )
}

/** Runs the checks, printing each line; fails with DoctorFailed when any failed. */
export const runChecks = (colour: boolean, agent?: string): Effect.Effect<void, DoctorFailed> =>
  Effect.gen(function*() {
    const all: Array<Finding> = []
    for (const check of checks(agent)) {
      const findings = yield* check
      for (const finding of findings) yield* Console.log(render(finding, colour))
      all.push(...findings)
    }
    yield* tally(all)
  }).pipe(
    // Doctor reports in its lines; the warnings the checked parts log would say it twice.
    Effect.provideService(References.MinimumLogLevel, "Error")
  )

/** config.env that does not parse is the first finding, and the last: nothing else can be read. */
const unreadableSettings = (message: string, remedy: string, colour: boolean) =>
  Effect.andThen(
    Console.log(render(fail("configuration", message, remedy), colour)),
    tally([fail("configuration", message)])
  )

export const doctor = Command.make("doctor", {
  brain: brainOption,
  agent: Flag.String("agent").pipe(Flag.optional, Flag.withDescription(HelpText.describe("doctor", "--agent")))
}, ({ agent, brain }) =>
  Effect.suspend(() => {
    const colour = colourWanted(process.stdout, process.env)
    // `--brain` checks the brain a `run --brain …` would use.
    return withSettings(runFlags({ debug: false, brain }))(runChecks(colour, Option.getOrUndefined(agent))).pipe(
      Effect.catchTag("ConfigFileError", (error) =>
        unreadableSettings(
          error.message,
          error.reason === "syntax" ? "fix that line of config.env" : "make config.env readable, or remove it",
          colour
        )),
      // withSettings reads PLANCKCLAW_DEBUG before anything else.
      Effect.catchTag("ConfigError", (error) =>
        unreadableSettings(ConfigErrors.describe(error).replace(/^configuration error: /, ""), "fix that setting", colour))
    )
  })).pipe(
    Command.withDescription(
      "Check the settings, the brain (key and model), the claws, the memory and runtime directories and Discord; exit 1 if anything fails."
    )
  )
