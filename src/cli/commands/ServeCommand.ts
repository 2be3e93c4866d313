/**
 * `planckclaw serve`: every agent under PLANCKCLAW_AGENTS_DIR in one
 * process, behind the HTTP API. The brain is called and the claws run in
 * process (no FIFOs): the built-in brain adapter `--brain` or
 * PLANCKCLAW_BRAIN names, and the scripts of CLAWS_DIR. Runs until stopped
 * (SIGINT, SIGTERM, SIGHUP).
 */
import * as path from "node:path"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Bridges from "../../pipes/Bridges.js"
import * as ClawsWithMcp from "../../claws/mcp/ClawsWithMcp.js"
import { debugOption, modelOption } from "../CliFlags.js"
import { MemoryConfig } from "../../memory/MemoryFiles.js"
import * as PromptFiles from "../../memory/PromptFiles.js"
import { runFlags, withSettings } from "../CliSettings.js"
import { WebConsole } from "../../config/settings/Serve.js"
import * as EarlyTierUp from "../../runtime/process/EarlyTierUp.js"
import * as Pretenuring from "../../runtime/process/Pretenuring.js"
import type * as V8Flags from "../../runtime/process/V8Flags.js"
import * as IdleCollection from "../../runtime/process/IdleCollection.js"
import * as YoungGeneration from "../../runtime/process/YoungGeneration.js"
import * as AgentHost from "../../hosts/serve/AgentHost.js"
import * as HttpApi from "../../hosts/serve/HttpApi.js"
import * as ServeSchedules from "../../hosts/serve/ServeSchedules.js"
import { HostError } from "../../hosts/serve/HostError.js"
import type { ClusterStartError } from "../../hosts/cluster/ClusterServe.js"
import type * as DiscordRoutes from "../../hosts/serve/DiscordRoutes.js"
import type { Brain } from "../../ports/Brain.js"
import type { Claws } from "../../ports/Claws.js"

/** A `--http` value that is no HOST:PORT. */
export class ListenFlagError extends Data.TaggedError("ListenFlagError")<{ readonly message: string }> {}

const httpOption = Flag.String("http").pipe(
  Flag.withDefault(`${HttpApi.DEFAULT_LISTEN.host}:${HttpApi.DEFAULT_LISTEN.port}`),
  Flag.withDescription(
    "where the HTTP API listens, HOST:PORT ([::1]:PORT for IPv6; port 0 picks a free one); a non-loopback host " +
      "needs PLANCKCLAW_HTTP_TOKEN"
  )
)

const brainOption = Flag.String("brain").pipe(
  Flag.optional,
  Flag.withDescription(
    "the brain, called in process: anthropic or openai (any Chat Completions API); default PLANCKCLAW_BRAIN, else anthropic"
  )
)

/** The built-in brain the settings choose; `none` or an executable cannot serve in process. */
const inProcessBrain = Effect.gen(function*() {
  const brain = yield* Effect.flatMap(Bridges.BrainChoiceConfig, (name) => Bridges.choose("brain", name, Bridges.brainNames))
  if (brain._tag !== "Builtin") {
    return yield* new Bridges.BridgeChoiceError({
      reason: "unknown",
      message: "planckclaw serve calls a built-in brain in process: use --brain anthropic or --brain openai"
    })
  }
  return Bridges.brainAdapters[brain.name]
})

const bridgeOption = Flag.Literals("bridge", ["none", "discord"]).pipe(
  Flag.withDefault("none" as const),
  Flag.withDescription(
    "discord: also answer Discord, one agent per channel, user or server (DISCORD_AGENT_PER); with --cluster, " +
      "one runner started with it holds the gateway at a time and the others wait to take over"
  )
)

// PLANCKCLAW_CONSOLE=0 for this start.
const noConsoleOption = Flag.Boolean("no-console").pipe(
  Flag.withoutNegation,
  Flag.withDefault(false),
  Flag.withDescription("serve the API alone, without the web console at / (PLANCKCLAW_CONSOLE=0)")
)

const clusterOption = Flag.Boolean("cluster").pipe(
  Flag.withoutNegation,
  Flag.withDefault(false),
  Flag.withDescription(
    "join a cluster of runners over PostgreSQL (PLANCKCLAW_DATABASE_URL, PLANCKCLAW_RUNNER_ADDRESS): any runner answers for any agent"
  )
)

export const serve = Command.make("serve", {
  http: httpOption,
  brain: brainOption,
  bridge: bridgeOption,
  cluster: clusterOption,
  noConsole: noConsoleOption,
  model: modelOption,
  debug: debugOption
}, (options) =>
  Effect.gen(function*() {
    const listen = yield* Result.match(HttpApi.parseListen(options.http), {
      onFailure: (message) => Effect.fail(new ListenFlagError({ message })),
      onSuccess: Effect.succeed
    })
    const brain = yield* inProcessBrain
    // Every agent this process serves runs turns like a run's (see Pretenuring, EarlyTierUp, YoungGeneration).
    yield* Effect.flatten(Pretenuring.readChoice())
    const earlyTierUp = yield* EarlyTierUp.readChoice()
    const capYoungGeneration = yield* YoungGeneration.readChoice()
    const tunedV8: V8Flags.During = (effect) => capYoungGeneration(earlyTierUp(effect))
    // Before the host starts (and answers what a previous run left): HttpApi.layer is built after it.
    yield* HttpApi.guard(listen)
    // The host's default soul goes whole into every request of an agent without its own: refused now if over its limit.
    yield* Effect.fromResult(PromptFiles.check(path.join(yield* MemoryConfig, "soul.md")))
    // Brain and claws are built once and shared by every agent; the HTTP
    // layer logs "HTTP API on HOST:PORT" once it listens.
    if (options.cluster) {
      const cluster = yield* Effect.promise(() => import("../../hosts/cluster/ClusterServe.js"))
      const served: Effect.Effect<
        never,
        Layer.Error<ReturnType<typeof HttpApi.layer>> | HostError | ClusterStartError | Effect.Error<ReturnType<typeof DiscordRoutes.run>>,
        Brain | Claws
      > = cluster.serve(listen, { discord: options.bridge === "discord" })
      return yield* tunedV8(served).pipe(Effect.provide(Layer.merge(brain, ClawsWithMcp.layerOffering)))
    }
    // One host for both: Discord's agents are the HTTP API's too. A fatal Discord refusal ends the service.
    // The agents' schedules fire beside it (ServeSchedules), through the same host.
    // Released agents' memory given back once the host is quiet (IdleCollection).
    const quietSeconds = yield* IdleCollection.QuietSecondsConfig
    const collecting = Effect.flatMap(AgentHost.AgentHost, (host) =>
      host.activity === undefined ? Effect.never : IdleCollection.run(host.activity, quietSeconds))
    const http = Effect.raceFirst(Effect.raceFirst(Layer.launch(HttpApi.layer(listen)), ServeSchedules.run()), collecting)
    // discord.js is heavy to load: only a Discord bridge pays for it. The messages owed a reply are kept
    // beside the outbox, so a stop between a message and its reply's outbox line loses no reply.
    const discord = Effect.gen(function*() {
      const [routes, owedFile, host] = yield* Effect.all([
        Effect.promise(() => import("../../hosts/serve/DiscordRoutes.js")),
        Effect.promise(() => import("../../hosts/serve/DiscordOwedFile.js")),
        AgentHost.AgentHost
      ])
      const owed = yield* Effect.mapError(owedFile.make(host.directory), (error) => new HostError({ reason: "unavailable", message: error.message }))
      return yield* routes.run({ owed })
    })
    yield* tunedV8(options.bridge === "discord" ? Effect.raceFirst(http, discord) : http).pipe(
      // The claws stay in the context too: POST /v1/mcp offers the scripts among them (OfferedClaws, McpRoute).
      Effect.provide(AgentHost.layer.pipe(Layer.provideMerge(Layer.merge(brain, ClawsWithMcp.layerOffering))))
    )
  }).pipe(withSettings(
    new Map([...runFlags(options), ...(options.noConsole ? [[WebConsole.key, "0"] as const] : [])]),
    "serve"
  ))).pipe(
    Command.withDescription(
      "Serve every agent of PLANCKCLAW_AGENTS_DIR over the HTTP API, in one process, until stopped; with --cluster, " +
        "serve the agents of a PostgreSQL database as one runner of a cluster."
    )
  )
