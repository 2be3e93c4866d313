/**
 * `planckclaw compact [--agent ID]`: old history folded into summary.md now,
 * by the brain the settings name, beside any run or serve of the same memory.
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as AgentSettings from "../../hosts/serve/AgentSettings.js"
import * as AgentStatus from "../../hosts/serve/AgentStatus.js"
import * as Compactor from "../../agent/Compactor.js"
import * as Memory from "../../memory/Memory.js"
import * as Bridges from "../../pipes/Bridges.js"
import * as ExecutableBrain from "../../pipes/ExecutableBrain.js"
import * as UsageLedger from "../../usage/UsageLedger.js"
import { debugOption, modelOption } from "../CliFlags.js"
import { debugFlags, modelFlags, withSettings } from "../CliSettings.js"
import * as HelpText from "../HelpText.js"

const agentOption = Flag.String("agent").pipe(
  Flag.optional,
  Flag.withDescription(HelpText.describe("compact", "--agent"))
)

/**
 * With `--agent ID`: the settings of agent ID as the service reads them (its
 * directory as PLANCKCLAW_DIR, its config.env over the host's settings).
 */
const forAgent = (agent: Option.Option<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Option.match(agent, {
    onNone: () => effect,
    onSome: (raw) =>
      Effect.gen(function*() {
        const { directory, id } = yield* AgentStatus.existingAgent(raw)
        const provider = yield* AgentSettings.provider(id, directory, yield* ConfigProvider.ConfigProvider)
        return yield* Effect.provideService(effect, ConfigProvider.ConfigProvider, provider)
      })
  })

export const compact = Command.make(
  "compact",
  { debug: debugOption, agent: agentOption, model: modelOption },
  (options) =>
    Effect.gen(function*() {
      // Compaction runs on its own: a built-in brain asks the API directly, an executable one
      // is started on pipes of this command's own (ExecutableBrain), beside any run.
      const brain = yield* Effect.flatMap(Bridges.BrainChoiceConfig, (name) => Bridges.choose("brain", name, Bridges.brainNames))
      if (brain._tag === "None") {
        return yield* new Bridges.BridgeChoiceError({
          reason: "unknown",
          message: "planckclaw compact needs a brain to write the summary, and PLANCKCLAW_BRAIN is none: send /compact " +
            "to the running agent, which asks its own brain, or name one (PLANCKCLAW_BRAIN=anthropic, openai or a bridge's path)"
        })
      }
      const layer = Compactor.layer.pipe(
        Layer.provide(UsageLedger.layer),
        Layer.provideMerge(Memory.layer),
        Layer.provide(brain._tag === "Builtin" ? Bridges.brainAdapters[brain.name] : ExecutableBrain.layer(brain.path))
      )
      // The compactor is used inside the layer's scope: its HTTP client lives as long as that.
      const report = yield* Effect.flatMap(Compactor.Compactor, (compactor) => compactor.compactNow).pipe(
        Effect.provide(layer),
        // The entry point prints a MemoryError as it is; here it is a failed compaction.
        Effect.catchTag("MemoryError", (failure) =>
          Effect.fail(new Memory.MemoryError({ ...failure, message: `compaction failed: ${failure.message}` })))
      )
      yield* Option.match(report, {
        onNone: () => Console.log("Nothing to compact: history holds no lines older than the last HISTORY_KEEP."),
        onSome: (done) =>
          Console.log(
            `Compacted: summarised ${done.summarised} lines into summary.md (${done.summaryBytes} bytes, ` +
              `${done.requests} request${done.requests === 1 ? "" : "s"}); kept ${done.kept} lines in history.jsonl` +
              (done.skipped > 0 ? `; dropped ${done.skipped} undecodable lines` : "") + "."
          )
      })
    }).pipe(forAgent(options.agent), withSettings(new Map([...debugFlags(options.debug), ...modelFlags(options.model)])))
).pipe(Command.withDescription(HelpText.summary("compact")))

