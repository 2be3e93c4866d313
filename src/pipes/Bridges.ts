/**
 * Which bridge serves each pipe pair. A bridge is the far end of one FIFO
 * pair: built in (a Layer whose fiber serves a port implementation, an
 * adapter, on the pipes) or an executable (a supervised child process);
 * `none` leaves the pipes to whoever opens them. The agent, on the near ends,
 * always speaks through the six FIFOs. Cli.ts composes these Layers from the
 * flags.
 */
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/Config"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Brain } from "../ports/Brain.js"
import * as BrainHttpClient from "../brain/BrainHttpClient.js"
import * as AnthropicBrain from "../brain/AnthropicBrain.js"
import * as OpenAiBrain from "../brain/OpenAiBrain.js"
import { Claws } from "../ports/Claws.js"
import * as ClawsWithMcp from "../claws/mcp/ClawsWithMcp.js"
import type { MissingSetting } from "../config/MissingSetting.js"
import { abandonNothing, make as makeAbandon } from "./Abandon.js"
import type { Choice } from "./BridgeChoice.js"
import type { FarEndExits } from "./Exchange.js"
import { EventsConfig, executable } from "./ExecutableEnd.js"
import type * as ExternalBridge from "./ExternalBridge.js"
import { BrainEnd, ClawsEnd, type FarEnd, InteractEnd } from "./FarEnd.js"
import * as Handover from "./Handover.js"
import { RunPaths } from "./RuntimeDir.js"
import * as Serve from "./Serve.js"
import { Interact } from "../ports/Interact.js"
import type { DiscordRefused } from "../interact/discord/DiscordRefused.js"
import * as TerminalInteract from "../interact/TerminalInteract.js"
import * as Logging from "../runtime/Logging.js"
import type { SpawnHelper } from "../runtime/process/SpawnHelper.js"
import type { Watchdog } from "../runtime/process/Watchdog.js"

// Declared in modules of their own (a flag read, a far end, an executable bridge); callers keep finding them here.
export { BridgeChoiceError, type Choice, choose } from "./BridgeChoice.js"
export { EventsConfig } from "./ExecutableEnd.js"
export { BrainEnd, ClawsEnd, type FarEnd, InteractEnd, type InteractFarEnd } from "./FarEnd.js"

/** What building an adapter can fail with: a setting, or a refusal it cannot get past. */
export type AdapterFailure = ConfigError.ConfigError | MissingSetting | DiscordRefused

/**
 * What the far ends need from the command's entry beyond the run's paths:
 * the spawn helper the built-in claws start claws from, and the watchdog an
 * executable bridge is listed with (SpawnHelper.layer gives both).
 */
export type ProcessServices = SpawnHelper | Watchdog

// discord.js is heavy to load: only a Discord bridge pays for it.
const discordAdapter: Layer.Layer<Interact, AdapterFailure> = Layer.unwrap(
  Effect.promise(() => import("../interact/discord/DiscordInteract.js")).pipe(Effect.map((discord) => discord.layer))
)

/** The adapters a built-in bridge serves, by the name its flag gives. */
export const interactAdapters = {
  cli: TerminalInteract.layer,
  discord: discordAdapter
} satisfies Record<string, Layer.Layer<Interact, AdapterFailure>>

export const brainAdapters = {
  anthropic: AnthropicBrain.layer.pipe(Layer.provide(BrainHttpClient.layer)),
  openai: OpenAiBrain.layer.pipe(Layer.provide(BrainHttpClient.layer))
} satisfies Record<string, Layer.Layer<Brain, AdapterFailure>>

export type BrainName = keyof typeof brainAdapters
export const brainNames = Object.keys(brainAdapters) as ReadonlyArray<BrainName>

// Which brain thinks (PLANCKCLAW_BRAIN, overridden by --brain); declared beside the brains.
export { BrainChoiceConfig } from "../config/BrainChoice.js"

export const clawsAdapters = {
  // The scripts, with the tools of mcp.json's MCP servers beside them.
  scripts: ClawsWithMcp.layer
} satisfies Record<string, Layer.Layer<Claws, AdapterFailure, SpawnHelper>>

/** Serves in a fiber of the layer's scope, logging to stderr: stdout carries only replies. */
const forkServing = <E>(serving: Effect.Effect<void, E>) =>
  Effect.map(Effect.forkScoped(Logging.toStderr(serving)), (fiber) => Fiber.join(fiber))

/** A built-in brain bridge; `withAgent` false: a bridge process of its own, which says it streams (Serve.serveBrain). */
const builtinBrain = (
  adapter: Layer.Layer<Brain, AdapterFailure>,
  withAgent: boolean
): Layer.Layer<BrainEnd, AdapterFailure, RunPaths> =>
  Layer.effect(
    BrainEnd,
    Effect.gen(function*() {
      const brain = yield* Brain
      const given = makeAbandon()
      return {
        done: yield* forkServing(Serve.serveBrain(brain, yield* RunPaths, { abandon: given, announce: !withAgent })),
        exits: noExits,
        abandon: given.abandon,
        // It streams when asked, if its brain does (Serve.serveBrain).
        events: "builtin"
      } satisfies FarEnd
    })
  ).pipe(Layer.provide(adapter))

const builtinClaws = (
  adapter: Layer.Layer<Claws, AdapterFailure, SpawnHelper>
): Layer.Layer<ClawsEnd, AdapterFailure, RunPaths | SpawnHelper> =>
  Layer.effect(
    ClawsEnd,
    Effect.gen(function*() {
      const claws = yield* Claws
      const given = makeAbandon()
      return { done: yield* forkServing(Serve.serveClaws(claws, yield* RunPaths, { abandon: given })), exits: noExits, abandon: given.abandon }
    })
  ).pipe(Layer.provide(adapter))

/**
 * A built-in interact bridge. In a run (`withAgent`) it lives beside the
 * agent and the two agree on when a piped run is over through a Handover;
 * as a process of its own it is done once its input ended and was answered.
 */
const builtinInteract = (
  adapter: Layer.Layer<Interact, AdapterFailure>,
  withAgent: boolean
): Layer.Layer<InteractEnd, AdapterFailure, RunPaths> =>
  Layer.effect(
    InteractEnd,
    Effect.gen(function*() {
      const interact = yield* Interact
      const paths = yield* RunPaths
      const handover = withAgent ? Option.some(yield* Handover.make({ events: interact.event !== undefined })) : Option.none()
      const done = yield* forkServing(
        Serve.serveInteract(interact, paths, Option.match(handover, { onNone: () => ({}), onSome: (h) => ({ handover: h }) }))
      )
      return { done, handover, exits: noExits, abandon: abandonNothing }
    })
  ).pipe(Layer.provide(adapter))

/** A far end with no process of ours to watch: a built-in bridge's fiber, or whoever opens the pipes. */
const noExits: FarEndExits = () => Effect.void

const nobody: FarEnd = { done: Effect.never, exits: noExits, abandon: abandonNothing }

export type FarEndFailure = AdapterFailure | ExternalBridge.ExternalBridgeError

/**
 * Whoever opens the pipes of a `none` bridge (a `planckclaw bridge` process, a
 * bridge of your own): offered the turns' events as an executable is, if it
 * asks for them (docs/pipes.md).
 */
const anybody: Effect.Effect<FarEnd, Config.ConfigError> = Effect.map(
  EventsConfig,
  (offered): FarEnd => offered ? { ...nobody, events: "announced" } : nobody
)

export const brainEnd = (
  choice: Choice<keyof typeof brainAdapters>,
  options: { readonly withAgent: boolean } = { withAgent: true }
): Layer.Layer<BrainEnd, FarEndFailure, RunPaths | Watchdog> =>
  choice._tag === "Builtin"
    ? builtinBrain(brainAdapters[choice.name], options.withAgent)
    : choice._tag === "External"
    ? Layer.effect(BrainEnd, executable("brain", choice.path))
    : Layer.effect(BrainEnd, anybody)

export const clawsEnd = (
  choice: Choice<keyof typeof clawsAdapters>
): Layer.Layer<ClawsEnd, FarEndFailure, RunPaths | ProcessServices> =>
  choice._tag === "Builtin"
    ? builtinClaws(clawsAdapters[choice.name])
    : choice._tag === "External"
    ? Layer.effect(ClawsEnd, executable("claw", choice.path))
    : Layer.succeed(ClawsEnd, nobody)

export const interactEnd = (
  choice: Choice<keyof typeof interactAdapters>,
  options: { readonly withAgent: boolean }
): Layer.Layer<InteractEnd, FarEndFailure, RunPaths | Watchdog> =>
  choice._tag === "Builtin"
    ? builtinInteract(interactAdapters[choice.name], options.withAgent)
    : choice._tag === "External"
    ? Layer.effect(InteractEnd, Effect.map(executable("interact", choice.path), (end) => ({ ...end, handover: Option.none() })))
    : Layer.effect(InteractEnd, Effect.map(anybody, (end) => ({ ...end, handover: Option.none() })))

export interface RunChoices {
  readonly bridge: Choice<keyof typeof interactAdapters>
  readonly brain: Choice<keyof typeof brainAdapters>
  readonly claw: Choice<keyof typeof clawsAdapters>
}

/**
 * The three far ends of a run, built in order: brain and claws first, so the
 * first message finds them, then the interact bridge that brings it.
 * `withAgent`: the agent runs in this process (`planckclaw run`), not in
 * another one (`planckclaw bridge`).
 */
export const farEnds = (
  choices: RunChoices,
  options: { readonly withAgent: boolean }
): Layer.Layer<BrainEnd | ClawsEnd | InteractEnd, FarEndFailure, RunPaths | ProcessServices> =>
  interactEnd(choices.bridge, options).pipe(
    Layer.provideMerge(clawsEnd(choices.claw)),
    Layer.provideMerge(brainEnd(choices.brain, options))
  )
