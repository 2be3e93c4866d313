/**
 * Which bridge serves each pipe pair. A bridge is the far end of one FIFO
 * pair: built in (a Layer whose fiber serves a port implementation, an
 * adapter, on the pipes) or an executable (a supervised child process);
 * `none` leaves the pipes to whoever opens them. The agent, on the near ends,
 * always speaks through the six FIFOs. Cli.ts composes these Layers from the
 * flags.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/Config"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Brain } from "../ports/Brain.js"
import * as BrainHttpClient from "../brain/BrainHttpClient.js"
import * as AnthropicBrain from "../brain/AnthropicBrain.js"
import * as OpenAiBrain from "../brain/OpenAiBrain.js"
import { Claws } from "../ports/Claws.js"
import * as ClawsWithMcp from "../claws/mcp/ClawsWithMcp.js"
import type { MissingSetting } from "../config/MissingSetting.js"
import * as Secrets from "../config/Secrets.js"
import { Debug, Events } from "../config/settings/Agent.js"
import { switchOf } from "../config/ConfigRange.js"
import { AnthropicApiKey, AnthropicBaseUrl, Model, OpenAiApiKey, OpenAiBaseUrl } from "../config/settings/Brain.js"
import { ClawsDir } from "../config/settings/Claws.js"
import * as DiscordSetting from "../config/settings/Discord.js"
import { abandonNothing, type AbandonRequests, make as makeAbandon } from "./Abandon.js"
import type { FarEndExits } from "./Exchange.js"
import * as ExternalBridge from "./ExternalBridge.js"
import type { FifoError, FifoPaths } from "./FifoPaths.js"
import * as Handover from "./Handover.js"
import { RunPaths } from "./RuntimeDir.js"
import * as Serve from "./Serve.js"
import { Interact, type InteractError } from "../ports/Interact.js"
import type { DiscordRefused } from "../interact/discord/DiscordRefused.js"
import * as TerminalInteract from "../interact/TerminalInteract.js"
import * as Logging from "../runtime/Logging.js"
import type { SpawnHelper } from "../runtime/process/SpawnHelper.js"
import type { Watchdog } from "../runtime/process/Watchdog.js"

export type Choice<Name extends string> =
  | { readonly _tag: "Builtin"; readonly name: Name }
  | { readonly _tag: "External"; readonly path: string }
  | { readonly _tag: "None" }

/** A bridge flag names no built-in bridge and no executable file. */
export class BridgeChoiceError extends Data.TaggedError("BridgeChoiceError")<{
  readonly reason: "unknown" | "not-executable"
  readonly message: string
}> {}

/** Reads a bridge flag: a built-in name, `none`, or a path to an executable. */
export const choose = <Name extends string>(
  role: string,
  value: string,
  builtins: ReadonlyArray<Name>
): Effect.Effect<Choice<Name>, BridgeChoiceError> => {
  if (value === "none") return Effect.succeed({ _tag: "None" })
  if ((builtins as ReadonlyArray<string>).includes(value)) return Effect.succeed({ _tag: "Builtin", name: value as Name })
  if (value.includes("/") || fs.existsSync(value)) {
    const resolved = path.resolve(value)
    const usable = fs.existsSync(resolved) && fs.statSync(resolved).isFile()
    return usable ? Effect.succeed({ _tag: "External", path: resolved }) : Effect.fail(
      new BridgeChoiceError({ reason: "not-executable", message: `--${role} ${value}: no such executable file` })
    )
  }
  return Effect.fail(
    new BridgeChoiceError({
      reason: "unknown",
      message: `unknown ${role} '${value}': expected ${[...builtins, "none"].join(", ")} or a path to an executable`
    })
  )
}

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

/** One far end, once started. */
export interface FarEnd {
  /**
   * Completes when the bridge is done on its own (an executable that exited
   * cleanly, a bridge process's interact input ended and answered); fails
   * when serving the pipes fails. A built-in bridge in a run, and `none`,
   * never complete: the run decides when it is over.
   */
  readonly done: Effect.Effect<void, FifoError | InteractError>
  /**
   * Where the near end hears that the far end's process exited, so what it
   * owed is not waited for (an executable bridge; see Exchange). A built-in
   * bridge and `none` never report one.
   */
  readonly exits: FarEndExits
  /** Where the near end gives up a request (a cancelled turn): a built-in bridge stops its work (Abandon). */
  readonly abandon: AbandonRequests
  /**
   * Whether it is offered the turns' events: `builtin`, a bridge of the run
   * that takes them (a brain streams when asked, FifoBrain); `announced`, an
   * executable started with PLANCKCLAW_EVENTS=1, which opts in itself
   * (docs/pipes.md). Absent: none, as the original's bridges expect.
   */
  readonly events?: "builtin" | "announced"
}

export interface InteractFarEnd extends FarEnd {
  /** Shared by a built-in interact bridge of a run with the agent (see Handover); none otherwise. */
  readonly handover: Option.Option<Handover.Handover>
}

/** PLANCKCLAW_EVENTS: whether an executable bridge is offered events (on unless set to 0). */
export const EventsConfig = switchOf(Events)

export class BrainEnd extends Context.Service<BrainEnd, FarEnd>()("planckclaw/BrainEnd") {}
export class ClawsEnd extends Context.Service<ClawsEnd, FarEnd>()("planckclaw/ClawsEnd") {}
export class InteractEnd extends Context.Service<InteractEnd, InteractFarEnd>()("planckclaw/InteractEnd") {}

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

type Role = "interact" | "brain" | "claw"

const flagOf = { interact: "bridge", brain: "brain", claw: "claw" } as const satisfies Record<Role, string>

const presentSettings = (settings: ReadonlyArray<{ readonly key: string }>) =>
  Effect.forEach(settings, ({ key }) => Effect.map(Config.option(Config.String(key)), (value) => [key, value] as const)).pipe(
    Effect.map((entries) =>
      Object.fromEntries(entries.flatMap(([name, value]) => Option.isSome(value) ? [[name, value.value]] : []))
    )
  )

/** The one secret a role's executable receives, if it is set. */
const secretFor = (name: Secrets.SecretName) =>
  Effect.map(
    Config.option(Config.Redacted(name)),
    (value): Partial<Record<Secrets.SecretName, Redacted.Redacted<string>>> =>
      Option.isSome(value) ? { [name]: value.value } : {}
  )

/** What an executable bridge of each role is started with: settings it reads, and only the secret it needs. */
const executableOptions = (
  role: Role,
  command: string,
  paths: FifoPaths
): Effect.Effect<ExternalBridge.ExternalBridgeOptions, ConfigError.ConfigError> =>
  Effect.gen(function*() {
    switch (role) {
      case "interact":
        return {
          name: role,
          command,
          paths,
          secrets: yield* secretFor(DiscordSetting.BotToken.key),
          extraEnv: yield* presentSettings([
            DiscordSetting.ChannelId,
            DiscordSetting.AllowedUsers,
            DiscordSetting.DirectMessages,
            DiscordSetting.ApiUrl,
            DiscordSetting.CatchUp,
            DiscordSetting.AttachmentBytes
          ]),
          // A terminal bridge reads our terminal, and its exit on end of input ends the run.
          stdin: "inherit",
          restart: "on-failure"
        }
      case "brain":
        return {
          name: role,
          command,
          paths,
          // Whichever API it calls: both brains' keys, nothing else.
          secrets: { ...yield* secretFor(AnthropicApiKey.key), ...yield* secretFor(OpenAiApiKey.key) },
          extraEnv: yield* presentSettings([AnthropicBaseUrl, OpenAiBaseUrl, Model, Debug]),
          // Our stdout carries only replies: what it prints is diagnostics.
          stdout: "stderr"
        }
      case "claw":
        return { name: role, command, paths, extraEnv: yield* presentSettings([ClawsDir]), stdout: "stderr" }
    }
  })

/** An executable bridge for the life of the layer; done when it will not be started again. */
const executable = (role: Role, command: string) =>
  Effect.gen(function*() {
    const given = yield* executableOptions(role, command, yield* RunPaths)
    // An interact or brain bridge may take the turns' events if it asks (a claw has none to take).
    const offered = role !== "claw" && (yield* EventsConfig)
    const options = offered ? { ...given, extraEnv: { ...given.extraEnv, [Events.key]: "1" } } : given
    const bridge = yield* ExternalBridge.make(options).pipe(
      Effect.mapError((error) =>
        new ExternalBridge.ExternalBridgeError({ message: `--${flagOf[role]} ${command}: ${error.message}`, cause: error })
      )
    )
    return {
      done: Effect.asVoid(bridge.finished),
      exits: bridge.exits,
      abandon: abandonNothing,
      ...(offered ? { events: "announced" as const } : {})
    } satisfies FarEnd
  })

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
