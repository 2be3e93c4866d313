/**
 * The Agent entity in this process over a test's database, with the real
 * AgentStore and TurnJournal: the cluster's messages kept in memory
 * (effect/cluster's TestRunner, a runner of its own each time it is built),
 * or, with `messages: "postgres"`, in the database's `cluster_` tables as a
 * runner keeps them (ReplyStatement over SqlMessageStorage), so a retry of a
 * key gets the reply the engine stored. `host` is the cluster's AgentHost
 * over it (ClusterHost), as the HTTP API uses it.
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as Sharding from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as TestRunner from "effect/cluster/TestRunner"
import * as SqlClient from "effect/sql/SqlClient"
import { ConfigProvider, Effect, Layer } from "effect"
import { Brain, type BrainService } from "../../../src/ports/Brain.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import * as AgentEntity from "../../../src/hosts/cluster/AgentEntity.js"
import * as AgentStore from "../../../src/hosts/cluster/AgentStore.js"
import * as ClusterHost from "../../../src/hosts/cluster/ClusterHost.js"
import * as ReplyStatement from "../../../src/hosts/cluster/ReplyStatement.js"
import * as TurnJournal from "../../../src/hosts/cluster/TurnJournal.js"
import * as SqlCompactionLocks from "../../../src/memory/sql/SqlCompactionLocks.js"

/** The agents' settings: the defaults, but for those a test gives (HISTORY_KEEP, …). */
const providerOf = (settings: Record<string, string> = {}) => ConfigProvider.fromEnvRecord(settings, { preserveEmptyStrings: true })

/** One runner whose messages are in the database (as `serve --cluster` keeps them), alone with every shard. */
const runnerOnPostgres = Sharding.layer.pipe(
  Layer.provideMerge(Runners.layerNoop),
  Layer.provideMerge(ReplyStatement.layer.pipe(Layer.provide(SqlMessageStorage.layerMigrations({})))),
  Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
  Layer.provide([ShardingConfig.layer(), NodeCrypto.layerDigest])
)

const parts = (sql: SqlClient.SqlClient, brain: BrainService, options: Options) => {
  const provider = providerOf(options.settings)
  const store = Layer.effect(
    AgentStore.AgentStore,
    Effect.map(SqlCompactionLocks.make, (compactionLocks) => AgentStore.postgres({ where: "test", defaultSoulFile: "", provider, sql, compactionLocks }))
  )
  return Layer.mergeAll(Layer.succeed(Brain, brain), InMemoryClaws.layer([]), store, TurnJournal.layer).pipe(
    Layer.provideMerge(Layer.succeed(SqlClient.SqlClient, sql)),
    Layer.provideMerge(Layer.succeed(ConfigProvider.ConfigProvider, provider))
  )
}

export interface Options {
  readonly messages?: "memory" | "postgres"
  /** Settings of the agents over the defaults, as environment variables. */
  readonly settings?: Record<string, string>
}

const runner = (options: Options) => options.messages === "postgres" ? runnerOnPostgres : TestRunner.layer

/** The entity (and the cluster's client of it) over `sql`. */
export const entity = (sql: SqlClient.SqlClient, brain: BrainService, options: Options = {}) =>
  AgentEntity.layer.pipe(Layer.provideMerge(runner(options)), Layer.provide(parts(sql, brain, options)))

/** The cluster's AgentHost over the entity. */
export const host = (sql: SqlClient.SqlClient, brain: BrainService, options: Options = {}) =>
  ClusterHost.layer({ sendTimeoutSeconds: 30 }).pipe(
    Layer.provideMerge(AgentEntity.layer),
    Layer.provideMerge(runner(options)),
    Layer.provide(parts(sql, brain, options))
  )

/** Sends `text` to agent `id` under Idempotency-Key `key`, to the entity itself. */
export const send = (id: string, text: string, key: string) =>
  Effect.flatMap(AgentEntity.Agent.client, (client) =>
    client(id).Send({ text, channel: "http", key: AgentEntity.messageKey(key), idempotencyKey: key }))
