/**
 * `planckclaw serve --cluster`: this process joins the cluster as a runner
 * (PLANCKCLAW_RUNNER_ADDRESS, where its peers reach it) over one PostgreSQL
 * database (PLANCKCLAW_DATABASE_URL), which holds the runners, the shard
 * locks, every message and reply (effect/cluster's tables) and the replies
 * agents decided (TurnJournal). Agents are `Agent` entities spread over the
 * runners by shard; the HTTP API answers for any agent from any runner.
 * With `--bridge discord`, the runner holding the Discord gateway
 * (DiscordGateway) routes each Discord message to its agent's entity,
 * wherever it lives (DiscordRoutes).
 *
 * The runner is the socket runner of @effect/platform-node with SQL storage,
 * assembled here as NodeClusterSocket.layer assembles it, but with the
 * engine's settings given in full (ShardingConfig.layer) instead of read
 * from its CONSTANT_CASE environment names.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import type * as Sharding from "effect/cluster/Sharding"
import * as SocketRunner from "effect/cluster/SocketRunner"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as RpcSerialization from "effect/rpc/RpcSerialization"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Cause from "effect/Cause"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Result from "effect/Result"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import type { Brain } from "../../ports/Brain.js"
import type { Claws } from "../../ports/Claws.js"
import * as Logging from "../../runtime/Logging.js"
import * as Prices from "../../usage/Prices.js"
import * as SqlCompactionLocks from "../../memory/sql/SqlCompactionLocks.js"
import * as SqlMigrations from "../../memory/sql/SqlMigrations.js"
import { describe } from "../../memory/sql/SqlResilience.js"
import * as AgentHost from "../serve/AgentHost.js"
import * as HttpApi from "../serve/HttpApi.js"
import * as AgentEntity from "./AgentEntity.js"
import * as AgentStore from "./AgentStore.js"
import * as ClusterHost from "./ClusterHost.js"
import * as ClusterSchedules from "./ClusterSchedules.js"
import { ClusterConfig, describeUrl, shardingConfig } from "./ClusterSettings.js"
import * as DiscordGateway from "./DiscordGateway.js"
import * as OutageLog from "./OutageLog.js"
import * as Pruning from "./Pruning.js"
import * as ReplyStatement from "./ReplyStatement.js"
import * as RunnerPresence from "./RunnerPresence.js"
import * as ShardLockRefresh from "./ShardLockRefresh.js"
import * as TurnJournal from "./TurnJournal.js"

/** The cluster could not start: the database is unreachable, or the agents' place is unusable. */
export class ClusterStartError extends Data.TaggedError("ClusterStartError")<{ readonly message: string }> {}

/** `layer` with its failure `f`'s (Effect 4's Layer has no mapError). */
const mapLayerError = <A, E, R, E2>(layer: Layer.Layer<A, E, R>, f: (error: E) => E2): Layer.Layer<A, E2, R> =>
  Layer.catch(layer, (error) => Layer.effectContext<A, E2, never>(Effect.fail(f(error))))

/**
 * Creates the cluster's tables (the engine's migrations) before the runner
 * starts, a few tries before giving up: runners start together, and a
 * database that has just come up may refuse the first connections.
 */
const clusterTables = Layer.effectDiscard(
  Effect.scoped(Layer.build(Layer.merge(SqlMessageStorage.layerMigrations({}), SqlRunnerStorage.layerMigrations({})))).pipe(
    Effect.sandbox,
    Effect.retry({ times: 5, schedule: Schedule.spaced("200 millis") }),
    Effect.mapError((cause) => new ClusterStartError({ message: `cannot create the cluster's tables: ${Cause.pretty(cause)}` }))
  )
)

/**
 * This process as a runner (Sharding), over the SqlClient provided. Peers
 * speak the engine's default wire (RpcSerialization.layerSchemaBinary), as
 * NodeClusterSocket.layer's runners do.
 */
export const runnerLayer = (
  config: ClusterConfig
): Layer.Layer<Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage, ClusterStartError, SqlClient.SqlClient> =>
  mapLayerError(
    SocketRunner.layer.pipe(
      Layer.provide([NodeClusterSocket.layerSocketServer, NodeClusterSocket.layerClientProtocol]),
      Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(NodeClusterSocket.layerClientProtocol))),
      // The engine's storage, with a final reply stored in one statement (ReplyStatement).
      Layer.provideMerge(ReplyStatement.layer.pipe(Layer.provide(NodeCrypto.layerDigest))),
      // Shard lock refreshes go together (ShardLockRefresh): each reply waits for one, not one each.
      // A runner no longer connected to the database is counted out at once (RunnerPresence).
      Layer.provide(ShardLockRefresh.layer(RunnerPresence.layer(SqlRunnerStorage.layerStorage({})))),
      Layer.provide(ShardingConfig.layer(shardingConfig(config))),
      Layer.provide(RpcSerialization.layerSchemaBinary())
    ),
    (error) =>
      new ClusterStartError({
        message: `cannot listen for peers on ${config.runnerAddress.host}:${config.runnerAddress.port} (PLANCKCLAW_RUNNER_ADDRESS): ${error.message}`
      })
  ).pipe(Layer.provide(clusterTables))

/**
 * The PostgreSQL client, once the database has answered (the pool connects
 * only when asked); its errors name the database without its password.
 */
export const databaseLayer = (config: ClusterConfig): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, ClusterStartError> => {
  const unreachable = (error: SqlError) =>
    new ClusterStartError({ message: `cannot reach the ${describeUrl(config.databaseUrl)} (PLANCKCLAW_DATABASE_URL): ${describe(error)}` })
  return mapLayerError(
    // Every connection is named for this runner: RunnerPresence counts a runner while one is open.
    PgClient.layer({ url: config.databaseUrl, maxConnections: 40, applicationName: RunnerPresence.applicationName(config.runnerAddress) }),
    unreachable
  ).pipe(Layer.tap((context) => Effect.mapError(Context.get(context, SqlClient.SqlClient)`SELECT 1`, unreachable)))
}

/** Agents in the database (memory in PostgreSQL), after its migrations. */
export const postgresStoreLayer = (config: ClusterConfig) =>
  Layer.effect(
    AgentStore.AgentStore,
    Effect.gen(function*() {
      const host = yield* AgentHost.HostConfig
      yield* SqlMigrations.run.pipe(
        Effect.mapError((error) => new ClusterStartError({ message: `cannot prepare the memory tables: ${error.message}` }))
      )
      // Read once, as `serve` reads it: a table that cannot be used stops the start, naming PLANCKCLAW_PRICES.
      const prices = yield* Prices.PricesConfig.pipe(Effect.mapError((error) => new ClusterStartError({ message: error.message })))
      return AgentStore.postgres({
        where: describeUrl(config.databaseUrl),
        prices,
        defaultSoulFile: path.join(host.defaultDir, "soul.md"),
        provider: yield* ConfigProvider.ConfigProvider,
        sql: yield* SqlClient.SqlClient,
        compactionLocks: yield* SqlCompactionLocks.make
      })
    })
  )

/**
 * The runner with its agents and the AgentHost answering for every agent of
 * the cluster; the store of agents' memory is provided by the caller.
 */
export const hostLayer = (config: ClusterConfig) =>
  ClusterHost.layer({ sendTimeoutSeconds: config.sendTimeoutSeconds }).pipe(
    Layer.provideMerge(AgentEntity.layer),
    // After the runner: its tables exist by then.
    Layer.provideMerge(Pruning.layer({ retentionSeconds: config.retentionSeconds })),
    Layer.provideMerge(runnerLayer(config)),
    Layer.provide(mapLayerError(TurnJournal.layer, (error) => new ClusterStartError({ message: `cannot prepare the database: ${error.message}` })))
  )

/** The runner, its agents and the host, over the database of `config`: what the HTTP API and Discord consume. */
export const servedLayer = (config: ClusterConfig) =>
  Layer.merge(
    // The agents' schedules fire on one runner of the cluster at a time (ClusterSchedules).
    ClusterSchedules.layer().pipe(Layer.provideMerge(hostLayer(config).pipe(Layer.provide(postgresStoreLayer(config))))),
    // Asks the database itself while the engine's shard locks are unhealthy, at the engine's refresh pace.
    OutageLog.probeLayer(shardingConfig(config).shardLockRefreshInterval)
  ).pipe(
    Layer.provideMerge(databaseLayer(config)),
    // One line per database outage instead of the engine's line per poll.
    Layer.provide(OutageLog.layer)
  )

const joining = (config: ClusterConfig) =>
  Logging.toStderr(Effect.logInfo(
    `joining the cluster of ${describeUrl(config.databaseUrl)} as runner ${config.runnerAddress.host}:${config.runnerAddress.port}`
  ))

/** Everything `planckclaw serve --cluster` runs: the runner, its agents, the HTTP API on `listen`. */
export const layer = (listen: HttpApi.Listen) =>
  Layer.unwrap(Effect.gen(function*() {
    const config = yield* ClusterConfig
    yield* joining(config)
    return HttpApi.layer(listen).pipe(Layer.provide(servedLayer(config)))
  }))

/**
 * Discord into the cluster's agents while this runner holds the gateway.
 * The catch-up state and the outbox of owed replies are this runner's, in
 * PLANCKCLAW_DIR; each message goes under its Discord id as Idempotency-Key
 * and is noted in the database until its reply is in the outbox (DiscordOwed).
 */
const discordRoutes = (config: ClusterConfig) =>
  Effect.gen(function*() {
    const { defaultDir } = yield* AgentHost.HostConfig
    const made = Result.try(() => fs.mkdirSync(defaultDir, { recursive: true, mode: 0o700 }))
    if (Result.isFailure(made)) {
      return yield* new ClusterStartError({ message: `PLANCKCLAW_DIR ${defaultDir} cannot hold the Discord bridge's state: ${String(made.failure)}` })
    }
    // discord.js is heavy to load: only a Discord runner pays for it.
    const routes = yield* Effect.promise(() => import("../serve/DiscordRoutes.js"))
    const owed = yield* Effect.flatMap(Effect.promise(() => import("./DiscordOwed.js")), (module) => module.make).pipe(
      Effect.mapError((error) => new ClusterStartError({ message: `cannot prepare the database for Discord: ${error.message}` }))
    )
    return yield* DiscordGateway.hold(routes.run({ stateDirectory: defaultDir, owed }), config.pollSeconds)
  })

/**
 * `planckclaw serve --cluster [--bridge discord]` until stopped; a fatal
 * Discord refusal (a rejected token) ends it, as in `planckclaw serve`.
 */
export const serve = (listen: HttpApi.Listen, options: { readonly discord: boolean }) =>
  Effect.gen(function*() {
    const config = yield* ClusterConfig
    yield* joining(config)
    const http = Layer.launch(HttpApi.layer(listen))
    return yield* (options.discord ? Effect.raceFirst(http, discordRoutes(config)) : http).pipe(
      Effect.provide(servedLayer(config))
    )
  })

/** Brain and Claws come from the command, built once and shared by every agent of this runner. */
export type Requirements = Brain | Claws

// Named here so a host can write the types it assembles: the store postgresStoreLayer makes and
// hostLayer (as ClusterHost and AgentEntity) needs, an error `serve` fails with.
export type { AgentStore } from "./AgentStore.js"
export type { DiscordRefused } from "../../interact/discord/DiscordRefused.js"
