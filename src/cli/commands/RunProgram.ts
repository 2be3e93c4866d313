/**
 * What `planckclaw run` does: its Layers, composed from the bridges its
 * flags choose, and the agent served on the pipes. RunCommand is the
 * effect/cli command of it.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Agent from "../../agent/Agent.js"
import * as FifoBrain from "../../pipes/FifoBrain.js"
import * as Unreachable from "../../brain/Unreachable.js"
import * as Bridges from "../../pipes/Bridges.js"
import * as FifoClaws from "../../pipes/FifoClaws.js"
import * as ScriptClaws from "../../claws/ScriptClaws.js"
import { runFlags, withSettings } from "../CliSettings.js"
import type { FifoPaths } from "../../pipes/FifoPaths.js"
import type * as BridgeClaim from "../../pipes/BridgeClaim.js"
import * as Handover from "../../pipes/Handover.js"
import * as RuntimeDir from "../../pipes/RuntimeDir.js"
import * as Intake from "../../agent/Intake.js"
import { Interact } from "../../ports/Interact.js"
import * as RunReplies from "./RunReplies.js"
import * as RunSchedule from "./RunSchedule.js"
import * as StartLine from "./StartLine.js"
import * as AgentReady from "../../interact/AgentReady.js"
import { ToolLines } from "../../interact/ToolLines.js"
import * as FifoInteract from "../../pipes/FifoInteract.js"
import * as MemoryHold from "../../memory/MemoryHold.js"
import * as Layout from "../../memory/Layout.js"
import * as MemoryFiles from "../../memory/MemoryFiles.js"
import * as EarlyTierUp from "../../runtime/process/EarlyTierUp.js"
import * as Pretenuring from "../../runtime/process/Pretenuring.js"
import * as YoungGeneration from "../../runtime/process/YoungGeneration.js"

/**
 * The agent on the near ends of the pipes: it speaks only through them. Its
 * patience on each pipe is longer than a built-in bridge's own give-up time
 * (FifoBrain.BridgePatienceConfig; a claw's limit plus a minute), so the
 * bridge's error answer, not the agent's timeout, ends a hopeless request.
 */
const nearEnds = (
  paths: FifoPaths,
  farEnds: { readonly brain: Bridges.FarEnd; readonly claws: Bridges.FarEnd; readonly interact: Bridges.InteractFarEnd },
  schedule: RunSchedule.RunSchedule
) =>
  Layer.unwrap(Effect.gen(function*() {
    const brainPatience = yield* FifoBrain.BridgePatienceConfig
    const clawTimeout = yield* ScriptClaws.ClawTimeoutConfig
    // Without a built-in bridge to wait for, what the far end left unread at the stop is kept for the next run.
    const memory = yield* MemoryFiles.MemoryConfig
    const shared = Option.match(farEnds.interact.handover, {
      onNone: () => ({
        keepUnread: Layout.files(memory).unreadReplies,
        ...(farEnds.interact.events === "announced" ? { eventsOnRequest: true } : {})
      }),
      onSome: (h) => ({ handover: h })
    })
    // The brain streams only where a turn may be shown as it goes: a piped run's wire stays as it was.
    const shown = Option.match(farEnds.interact.handover, { onNone: () => false, onSome: (h) => h.events }) ||
      farEnds.interact.events === "announced"
    const streaming = shown ? farEnds.brain.events : undefined
    // The near ends stay in the context too: the start line asks the claws' catalogue (StartLine).
    // The agent's claws have the schedule tools beside them (RunSchedule); the start line counts the claws' own.
    // The memory directory is held already, before the bridges started (runLayer).
    return Agent.layerOnHeldMemory.pipe(
      Layer.provide(RunSchedule.claws(schedule)),
      Layer.provideMerge(Layer.mergeAll(
        FifoBrain.layer({
          paths,
          timeout: brainPatience,
          farEndExits: farEnds.brain.exits,
          abandon: farEnds.brain.abandon,
          ...(streaming === undefined ? {} : { streaming })
        }),
        FifoClaws.layer({
          paths,
          callTimeout: Duration.seconds(clawTimeout + 60),
          farEndExits: farEnds.claws.exits,
          abandon: farEnds.claws.abandon
        })
      )),
      // An executable bridge's exit ends the line it left open, before its restart writes (FifoInteract).
      Layer.merge(FifoInteract.layer({ paths, farEndExits: farEnds.interact.exits, ...shared }))
    )
  }))

/** What `run`'s flags give its handler. */
export interface RunOptions {
  readonly bridge: string
  readonly brain: Option.Option<string>
  readonly claw: string
  readonly model: Option.Option<string>
  readonly debug: boolean
  /** Tool lines on stderr when stdout is no terminal (ToolLines). */
  readonly verbose: boolean
}

/** What the flags choose; an unknown name or a path that is no file is refused before anything starts. */
const runChoices = (options: { readonly bridge: string; readonly claw: string }) =>
  Effect.all({
    bridge: Bridges.choose("bridge", options.bridge, ["cli", "discord"] as const),
    // The flag reaches this setting through the ConfigProvider (runFlags).
    brain: Effect.flatMap(Bridges.BrainChoiceConfig, (brain) => Bridges.choose("brain", brain, Bridges.brainNames)),
    claw: Bridges.choose("claw", options.claw, ["scripts"] as const)
  })

/**
 * The built-in bridges' adapters among `choices`: the very Layer values
 * Bridges.farEnds provides to its far ends, so a graph building both builds
 * each once (layers are shared by reference).
 */
const builtinAdapters = (choices: Bridges.RunChoices) =>
  Layer.mergeAll(
    choices.brain._tag === "Builtin" ? Bridges.brainAdapters[choices.brain.name] : Layer.empty,
    choices.claw._tag === "Builtin" ? Bridges.clawsAdapters[choices.claw.name] : Layer.empty,
    choices.bridge._tag === "Builtin" ? Bridges.interactAdapters[choices.bridge.name] : Layer.empty
  )

/** The roles whose pipes the run serves itself (a built-in bridge or an executable it starts): claimed for it. */
const servedRoles = (choices: Bridges.RunChoices): ReadonlyArray<BridgeClaim.Role> =>
  ([["interact", choices.bridge], ["brain", choices.brain], ["claw", choices.claw]] as const).flatMap(([role, choice]) =>
    choice._tag === "None" ? [] : [role]
  )

/**
 * What the run's handler gets: the memory directory held first; then the
 * runtime directory (its mkfifo child) and the built-in adapters side by
 * side, as the adapters need no pipe (a brain's settings, the claws'
 * directory watch, the terminal); then the far ends serving the pipes.
 * Only RunPaths and the far ends are handed on, not the adapters.
 */
const runLayer = (choices: Bridges.RunChoices) =>
  Layer.merge(Bridges.farEnds(choices, { withAgent: true }), Layer.effect(RuntimeDir.RunPaths, RuntimeDir.RunPaths)).pipe(
    Layer.provide(Layer.merge(RuntimeDir.layerServing(servedRoles(choices)), builtinAdapters(choices))),
    Layer.provideMerge(AgentReady.layer),
    Layer.provideMerge(MemoryHold.layer)
  )

/**
 * `planckclaw run`: holds the memory directory, lays the FIFOs out, starts
 * the bridges on their far ends (layerFor, see runLayer) and the agent on
 * the near ends; once the agent's layers are built it can take a message,
 * and the terminal shows its prompt (AgentReady). Ends when an interact bridge whose input ended has
 * delivered its last reply; with `--bridge none` it runs until stopped. `piped` (the terminal
 * bridge on a standard input that is no terminal): it then fails with UnansweredMessages when
 * any reply said the brain could not answer. `interactive`: the start line comes before the prompt.
 */
export const serve = (options: {
  readonly piped: boolean
  readonly interactive: boolean
  readonly clawsServed: boolean
  readonly bridge: string
}) => Effect.gen(function*() {
  const paths = yield* RuntimeDir.RunPaths
  const interact = yield* Bridges.InteractEnd
  const brain = yield* Bridges.BrainEnd
  const claws = yield* Bridges.ClawsEnd
  // Read now, so a malformed value is refused at start-up; applied once the agent has started (see Pretenuring, EarlyTierUp, YoungGeneration).
  const turnOffPretenuring = yield* Pretenuring.readChoice()
  const tierUpEarly = yield* EarlyTierUp.readChoice()
  const capYoungGeneration = yield* YoungGeneration.readChoice()
  // The agent's loop ends once every line of this run is read, answered, and
  // the work it started (delivery, a due compaction) is done; then the last
  // replies still in interact_out reach the user (see Handover). Without a
  // built-in interact bridge, an executable's exit ends the run, and with
  // none it goes on until stopped.
  // Every reply counted: a piped run in which one said the brain could not answer exits non-zero (RunReplies).
  const tally = yield* RunReplies.makeTally
  // The schedule's entries fire into the agent beside the bridge's messages (RunSchedule).
  const schedule = yield* RunSchedule.make(options.bridge)
  const intake = Effect.flatMap(Interact, (near) =>
    Effect.scoped(Effect.flatMap(RunSchedule.interact(schedule, RunReplies.counting(near, tally)), (scheduled) =>
      Effect.provideService(Intake.run, Interact, scheduled))))
  const ready = Effect.andThen(StartLine.say(options.interactive, options.clawsServed), AgentReady.signal)
  const serving = Effect.andThen(ready, Effect.andThen(turnOffPretenuring, capYoungGeneration(tierUpEarly(intake)))).pipe(
    Effect.provide(nearEnds(paths, { brain, claws, interact }, schedule)),
    Effect.andThen(Option.match(interact.handover, { onNone: () => Effect.void, onSome: Handover.repliesDelivered }))
  )
  yield* Effect.raceFirst(serving, interact.done)
  if (options.piped) yield* RunReplies.verdict(tally)
})

/** What the run's handler is given: its layers, for the bridges its flags choose (see runLayer). */
export const layerFor = (options: RunOptions) => Layer.unwrap(Effect.map(runChoices(options), runLayer))

/**
 * `run` with these options (RunCommand.run's handler too): `serve` in its
 * layers, inside the settings with the flags', which (and the secrets'
 * withdrawal with them) come before anything the layers start.
 */
export const runWith = (options: RunOptions) =>
  withSettings(runFlags(options), "run")(
    // Its user waits at the terminal or in a script: a brain that cannot be reached is said at once (see Unreachable).
    Effect.provide(serve(terminalOf(options)), layerFor(options)).pipe(
      Effect.provideService(Unreachable.GiveUpWhenUnreachable, true),
      options.verbose ? Effect.provideService(ToolLines, process.stderr) : (effect) => effect
    )
  )

/** How the run's terminal is used: piped (its exit status counts the replies) or interactive (the start line). */
const terminalOf = (options: RunOptions) => {
  const terminal = options.bridge === "cli"
  return {
    piped: terminal && process.stdin.isTTY !== true,
    interactive: terminal && process.stdin.isTTY === true && process.stdout.isTTY === true,
    clawsServed: options.claw !== "none",
    bridge: options.bridge
  }
}

const valued = { "--bridge": "bridge", "--brain": "brain", "--claw": "claw", "--model": "model" } as const

/**
 * A `run` command line in its plain form, read without effect/cli, whose
 * parser took a tenth of a start: `run`, then `--bridge X`, `--brain X`,
 * `--claw X` and `--model X` (each at most once, the value not empty and not like a flag),
 * `--debug` and `--verbose`, in any order. The options are the ones effect/cli would give
 * (test/RunPlainLine.test.ts compares them). Anything else is None and goes
 * to effect/cli: other spellings, a repeated flag, effect/cli's own options
 * and every mistake, which it explains.
 */
export const plainRunOptions = (args: ReadonlyArray<string>): Option.Option<RunOptions> => {
  if (args[0] !== "run") return Option.none()
  const values: Partial<Record<(typeof valued)[keyof typeof valued], string>> = {}
  let debug = false
  let verbose = false
  for (let i = 1; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--debug" && !debug) {
      debug = true
      continue
    }
    if (arg === "--verbose" && !verbose) {
      verbose = true
      continue
    }
    const key = Object.hasOwn(valued, arg) ? valued[arg as keyof typeof valued] : undefined
    const value = args[i + 1]
    if (key === undefined || values[key] !== undefined || value === undefined || value === "" || value.startsWith("-")) {
      return Option.none()
    }
    values[key] = value
    i++
  }
  return Option.some({
    bridge: values.bridge ?? "cli",
    brain: Option.fromNullishOr(values.brain),
    claw: values.claw ?? "scripts",
    model: Option.fromNullishOr(values.model),
    debug,
    verbose
  })
}
