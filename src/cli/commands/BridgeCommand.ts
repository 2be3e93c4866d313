import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as BridgeClaim from "../../pipes/BridgeClaim.js"
import * as Bridges from "../../pipes/Bridges.js"
import * as RunningAgent from "../../pipes/RunningAgent.js"
import * as RuntimeDir from "../../pipes/RuntimeDir.js"
import { withSettings } from "../CliSettings.js"
import * as HelpText from "../HelpText.js"

const builtinNames = ["cli", "discord", "anthropic", "openai", "scripts"] as const
type BuiltinName = (typeof builtinNames)[number]

/** A bridge process serves one built-in bridge: the run's far ends with the other two left to the run. */
const servedAlone = (name: BuiltinName): Bridges.RunChoices => ({
  bridge: name === "cli" || name === "discord" ? { _tag: "Builtin", name } : { _tag: "None" },
  brain: name === "anthropic" || name === "openai" ? { _tag: "Builtin", name } : { _tag: "None" },
  claw: name === "scripts" ? { _tag: "Builtin", name } : { _tag: "None" }
})

/** A bridge process's work: serve its far end until it, or the run it serves, ends. */
const servedBridge = Effect.gen(function*() {
  const [brain, claws, interact] = [yield* Bridges.BrainEnd, yield* Bridges.ClawsEnd, yield* Bridges.InteractEnd]
  const running = yield* RunningAgent.RunningAgent
  // The first to end, in success or failure (raceAll would wait for a success).
  yield* Effect.raceFirst(running.ended, Effect.raceFirst(brain.done, Effect.raceFirst(claws.done, interact.done)))
})

/** The role a built-in bridge serves (see BridgeClaim). */
const roleOf = (name: BuiltinName): BridgeClaim.Role =>
  name === "cli" || name === "discord" ? "interact" : name === "scripts" ? "claw" : "brain"

/**
 * `planckclaw bridge NAME`: one built-in bridge on the FIFOs of a running
 * agent, once it has claimed its role there (one bridge per role: see
 * BridgeClaim). It ends when it is done (an interact bridge whose input
 * ended and was answered), or fails when the run it serves ends. Its layers
 * are built inside the settings, which come before anything they start.
 */
export const bridge = Command.make(
  "bridge",
  { name: Argument.Literals("NAME", builtinNames).pipe(Argument.withDescription(HelpText.describe("bridge", "NAME"))) },
  ({ name }) => {
    const claimed = Layer.unwrap(Effect.gen(function*() {
      const [paths, running] = [yield* RuntimeDir.RunPaths, yield* RunningAgent.RunningAgent]
      yield* BridgeClaim.claim(paths.runDir, roleOf(name), running.pid)
      return Bridges.farEnds(servedAlone(name), { withAgent: false })
    }))
    return Effect.provide(servedBridge, claimed.pipe(Layer.provideMerge(RunningAgent.layer))).pipe(withSettings(new Map()))
  }
).pipe(
  Command.withDescription(HelpText.summary("bridge"))
)

