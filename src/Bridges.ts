/**
 * Which bridge serves each pipe pair, and how `planckclaw run` and
 * `planckclaw bridge` put them together. The agent always speaks through
 * the six FIFOs; a built-in bridge serves the far end from a fiber of this
 * process, an executable serves it as a supervised child process, and
 * `none` leaves the pipes to whoever opens them.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Agent from "./Agent.js"
import { Brain } from "./Brain.js"
import * as AnthropicBrain from "./brain/AnthropicBrain.js"
import * as FifoBrain from "./brain/FifoBrain.js"
import { Claws } from "./Claws.js"
import * as FifoClaws from "./claws/FifoClaws.js"
import * as ScriptClaws from "./claws/ScriptClaws.js"
import * as ExternalBridge from "./fifo/ExternalBridge.js"
import * as Handover from "./fifo/Handover.js"
import { type FifoPaths, fifoPathsConfig, makeRuntimeDir, pidFileName } from "./fifo/RuntimeDir.js"
import * as Serve from "./fifo/Serve.js"
import { Interact } from "./Interact.js"
import * as FifoInteract from "./interact/FifoInteract.js"
import * as TerminalInteract from "./interact/TerminalInteract.js"
import { isAlive } from "./process/PidLiveness.js"
import { StartupError } from "./StartupError.js"

export type Choice<Name extends string> =
  | { readonly _tag: "Builtin"; readonly name: Name }
  | { readonly _tag: "External"; readonly path: string }
  | { readonly _tag: "None" }

/** Reads a bridge flag: a built-in name, `none`, or a path to an executable. */
export const choose = <Name extends string>(
  role: string,
  value: string,
  builtins: ReadonlyArray<Name>
): Effect.Effect<Choice<Name>, StartupError> => {
  if (value === "none") return Effect.succeed({ _tag: "None" })
  if ((builtins as ReadonlyArray<string>).includes(value)) return Effect.succeed({ _tag: "Builtin", name: value as Name })
  if (value.includes("/") || fs.existsSync(value)) {
    const resolved = path.resolve(value)
    const usable = fs.existsSync(resolved) && fs.statSync(resolved).isFile()
    return usable ? Effect.succeed({ _tag: "External", path: resolved }) : Effect.fail(
      new StartupError({ exitCode: 2, message: `--${role} ${value}: no such executable file` })
    )
  }
  return Effect.fail(
    new StartupError({
      exitCode: 2,
      message: `unknown ${role} '${value}': expected ${[...builtins, "none"].join(", ")} or a path to an executable`
    })
  )
}

/** What building a built-in bridge can fail with: a setting, or a start-up condition. */
export type BridgeFailure = ConfigError.ConfigError | StartupError

// discord.js is heavy to load: only a Discord bridge pays for it.
const discordLayer: Layer.Layer<Interact, BridgeFailure> = Layer.unwrapEffect(
  Effect.promise(() => import("./interact/discord/DiscordInteract.js")).pipe(Effect.map((discord) => discord.layer))
)

export const interactLayers = {
  cli: TerminalInteract.layer,
  discord: discordLayer
} satisfies Record<string, Layer.Layer<Interact, BridgeFailure>>

export const brainLayers = {
  anthropic: AnthropicBrain.layer.pipe(Layer.provide(FetchHttpClient.layer))
} satisfies Record<string, Layer.Layer<Brain, BridgeFailure>>

export const clawsLayers = {
  scripts: ScriptClaws.layer
} satisfies Record<string, Layer.Layer<Claws, BridgeFailure>>

const secret = (name: string) => Config.option(Config.redacted(name))

const secrets = (entries: Record<string, Option.Option<Redacted.Redacted<string>>>) =>
  Object.fromEntries(Object.entries(entries).flatMap(([name, value]) => Option.isSome(value) ? [[name, value.value]] : []))

const settings = (names: ReadonlyArray<string>) =>
  Effect.forEach(names, (name) => Effect.map(Config.option(Config.string(name)), (value) => [name, value] as const)).pipe(
    Effect.map((entries) =>
      Object.fromEntries(entries.flatMap(([name, value]) => Option.isSome(value) ? [[name, value.value]] : []))
    )
  )

const external = (role: "interact" | "brain" | "claw", command: string, paths: FifoPaths) =>
  Effect.gen(function*() {
    const options: ExternalBridge.ExternalBridgeOptions = role === "interact"
      ? {
        name: role,
        command,
        paths,
        secrets: secrets({ DISCORD_BOT_TOKEN: yield* secret("DISCORD_BOT_TOKEN") }),
        extraEnv: yield* settings(["DISCORD_CHANNEL_ID", "DISCORD_ALLOWED_USERS", "DISCORD_DMS", "DISCORD_API_URL"]),
        stdin: "inherit",
        restart: "on-failure"
      }
      : role === "brain"
      ? {
        name: role,
        command,
        paths,
        secrets: secrets({ ANTHROPIC_API_KEY: yield* secret("ANTHROPIC_API_KEY") }),
        extraEnv: yield* settings(["ANTHROPIC_BASE_URL", "PLANCKCLAW_MODEL", "PLANCKCLAW_DEBUG"])
      }
      : { name: role, command, paths, extraEnv: yield* settings(["CLAWS_DIR"]) }
    return yield* ExternalBridge.make(options).pipe(
      Effect.mapError((error) => new StartupError({ exitCode: 2, message: `--${role === "claw" ? "claw" : role === "brain" ? "brain" : "bridge"} ${command}: ${error.message}` }))
    )
  })

/** Builds a built-in bridge's service for this scope. */
const service = <I, S>(tag: Context.Tag<I, S>, layer: Layer.Layer<I, BridgeFailure>) =>
  Effect.map(Layer.build(layer), (context) => Context.get(context, tag))

const fifoFailure = (error: { readonly message: string }) => new StartupError({ exitCode: 1, message: error.message })

// How long the agent waits on the pipes: longer than a built-in bridge's own
// give-up time (every attempt timing out, plus the longest backoffs), so the
// bridge's error answer, not the agent's timeout, ends a hopeless request.
const brainPatience = Effect.map(
  Config.all([AnthropicBrain.BrainTimeoutConfig, AnthropicBrain.BrainRetriesConfig]),
  ([timeout, retries]) => Duration.seconds((timeout + 60) * (retries + 1) + 60)
)
const clawPatience = Effect.map(ScriptClaws.ClawTimeoutConfig, (timeout) => Duration.seconds(timeout + 60))

export interface RunChoices {
  readonly bridge: Choice<"cli" | "discord">
  readonly brain: Choice<"anthropic">
  readonly claw: Choice<"scripts">
}

/**
 * `planckclaw run`: lays the FIFOs, starts the bridges on their far ends and
 * the agent on the near ends. Ends when an interact bridge whose input ended
 * has delivered its last reply; with `--bridge none` it runs until stopped.
 */
export const run = (choices: RunChoices) =>
  Effect.gen(function*() {
    const { runDir } = yield* fifoPathsConfig
    const paths = yield* makeRuntimeDir(runDir).pipe(Effect.mapError(fifoFailure))

    // The far ends: brain and claws first, so the first message finds them.
    if (choices.brain._tag === "Builtin") {
      const brain = yield* service(Brain, brainLayers[choices.brain.name])
      yield* Effect.forkScoped(Serve.serveBrain(brain, paths))
    } else if (choices.brain._tag === "External") {
      yield* external("brain", choices.brain.path, paths)
    }
    if (choices.claw._tag === "Builtin") {
      const claws = yield* service(Claws, clawsLayers[choices.claw.name])
      yield* Effect.forkScoped(Serve.serveClaws(claws, paths))
    } else if (choices.claw._tag === "External") {
      yield* external("claw", choices.claw.path, paths)
    }
    // A built-in interact bridge lives in this process: it and the agent agree
    // on when a piped run is over (see Handover). An executable's exit ends the
    // run; with none, the run goes on until stopped.
    const handover = choices.bridge._tag === "Builtin" ? yield* Handover.make : undefined
    const interactEnd: Effect.Effect<unknown, unknown, Scope.Scope> = choices.bridge._tag === "Builtin"
      ? Effect.flatMap(service(Interact, interactLayers[choices.bridge.name]), (interact) =>
        Serve.serveInteract(interact, paths, { ...(handover === undefined ? {} : { handover }) }))
      : choices.bridge._tag === "External"
      ? Effect.flatMap(external("interact", choices.bridge.path, paths), (bridge) => bridge.finished)
      : Effect.never

    // The near ends: the agent speaks only through the pipes.
    const agent = Agent.layerWithMemory.pipe(
      Layer.provide(Layer.mergeAll(
        FifoBrain.layer({ paths, timeout: yield* brainPatience }),
        FifoClaws.layer({ paths, callTimeout: yield* clawPatience })
      )),
      Layer.merge(FifoInteract.layer({ paths, ...(handover === undefined ? {} : { handover }) }))
    )
    // The agent's loop ends once every line of this run is read, answered, and
    // the work it started (delivery, a due compaction) is done; then the last
    // replies still in interact_out reach the user.
    const serving = Agent.serve.pipe(
      Effect.provide(agent),
      Effect.zipRight(handover === undefined ? Effect.void : Handover.repliesDelivered(handover))
    )
    yield* Effect.raceFirst(serving, interactEnd)
  })

/** `planckclaw bridge NAME`: one built-in bridge on the FIFOs of a running agent. */
export const bridge = (name: "cli" | "discord" | "anthropic" | "scripts") =>
  Effect.gen(function*() {
    const paths = yield* fifoPathsConfig
    const missing = [paths.interactIn, paths.brainIn, paths.clawIn].filter((fifo) => !fs.existsSync(fifo))
    if (missing.length > 0) {
      return yield* new StartupError({
        exitCode: 1,
        message: `no runtime directory at ${paths.runDir} (missing ${missing.map((m) => path.basename(m)).join(", ")}): ` +
          "start `planckclaw run --bridge none` (or with the bridges you keep) first"
      })
    }
    const pidFile = path.join(paths.runDir, pidFileName)
    const owner = readOwner(pidFile)
    if (owner === undefined || !isAlive(owner)) {
      return yield* new StartupError({
        exitCode: 1,
        message: `no live planckclaw run owns ${paths.runDir}: start \`planckclaw run\` first`
      })
    }
    const serving = Effect.gen(function*() {
      switch (name) {
        case "cli":
        case "discord":
          return yield* Serve.serveInteract(yield* service(Interact, interactLayers[name]), paths)
        case "anthropic":
          return yield* Serve.serveBrain(yield* service(Brain, brainLayers.anthropic), paths)
        case "scripts":
          return yield* Serve.serveClaws(yield* service(Claws, clawsLayers.scripts), paths)
      }
    })
    // The pipes stay open on our side, so the run's end shows no end-of-file:
    // watch its pid instead, or this bridge would serve pipes nobody reads.
    const runEnded = Effect.suspend(() => {
      const current = readOwner(pidFile)
      return current === owner && isAlive(owner) ? Effect.fail("running" as const) : Effect.void
    }).pipe(
      Effect.retry(Schedule.spaced("1 second")),
      Effect.zipRight(
        new StartupError({
          exitCode: 1,
          message: `the run this bridge served (pid ${owner}) has ended; start the bridge again for the next run`
        })
      )
    )
    return yield* Effect.raceFirst(serving, runEnded)
  })

const readOwner = (pidFile: string): number | undefined => {
  const text = Either.try(() => fs.readFileSync(pidFile, "utf8"))
  const pid = Either.isRight(text) ? Number(text.right.trim()) : Number.NaN
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
}
