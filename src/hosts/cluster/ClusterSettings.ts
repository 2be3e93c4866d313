/**
 * The settings of `planckclaw serve --cluster`, each declared once here with
 * its range. Everything the cluster engine reads is passed to it explicitly
 * (ShardingConfig.layer), never read from the environment by the engine
 * itself: its own CONSTANT_CASE names (PORT, HOST, ...) would let an
 * unrelated variable move the runner.
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import { invalidSettings, numberOf } from "../../config/ConfigRange.js"
import * as ClusterSetting from "../../config/settings/Cluster.js"
import { DatabaseUrlConfig } from "../../memory/sql/SqlDatabase.js"
import { HostConfig } from "../serve/AgentHost.js"

export interface HostPort {
  readonly host: string
  readonly port: number
}

/** `HOST:PORT` (`[::1]:PORT` for IPv6), port 1 to 65535: a runner's address must be a real one. */
export const parseHostPort = (name: string, text: string): Result.Result<HostPort, string> => {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s\]]+)):(\d{1,5})$/.exec(text.trim())
  const port = match === null ? Number.NaN : Number(match[3])
  if (match === null || !(port >= 1 && port <= 65535)) {
    return Result.fail(`${name} expects HOST:PORT with a port from 1 to 65535 (for example 10.0.0.5:34431), got ${JSON.stringify(text)}`)
  }
  return Result.succeed({ host: match[1] ?? match[2]!, port })
}

// The message names the setting already: refused as a check of its own, not under its key again.
const hostPort = (name: string) =>
  Config.String(name).pipe(
    Config.mapEffect((text) =>
      Result.match(parseHostPort(name, text), {
        onFailure: (message) => Effect.fail(invalidSettings(message)),
        onSuccess: Effect.succeed
      })
    )
  )

export { describeUrl } from "../../memory/sql/SqlDatabase.js"

/**
 * Config.all, refusing with every setting that fails, not only the first
 * (Effect 4's Config.all stops at the first): one run names all it lacks.
 */
const allReported = <const Configs extends Record<string, Config.Config<unknown>>>(
  configs: Configs
): Config.Config<{ -readonly [K in keyof Configs]: Config.Success<Configs[K]> }> => {
  const attempts = Object.fromEntries(Object.entries(configs).map(([key, config]) => [
    key,
    config.pipe(
      Config.map((value): Result.Result<unknown, Config.ConfigError> => Result.succeed(value)),
      Config.orElse((error) => Config.succeed<Result.Result<unknown, Config.ConfigError>>(Result.fail(error)))
    )
  ]))
  return Config.all(attempts).pipe(Config.mapEffect((results) => {
    const failures = Object.values(results).filter(Result.isFailure).map((result) => result.failure)
    const issues = failures.flatMap((error) => error.cause._tag === "SchemaError" ? [error.cause.issue] : [])
    if (failures.length === 0) {
      return Effect.succeed(
        Object.fromEntries(Object.entries(results).map(([key, result]) => [key, Result.getOrUndefined(result)])) as {
          -readonly [K in keyof Configs]: Config.Success<Configs[K]>
        }
      )
    }
    const [first, ...rest] = issues
    return Effect.fail(
      first === undefined || rest.length === 0 || issues.length < failures.length
        ? failures[0]!
        : new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.Composite(Schema.Unknown.ast, [first, ...rest])))
    )
  }))
}

export const ClusterConfig = allReported({
  /** postgres://user:password@host:port/database; the password is never logged. */
  databaseUrl: DatabaseUrlConfig,
  /** Where this runner is reached by its peers (advertised in the database). */
  runnerAddress: hostPort(ClusterSetting.RunnerAddress.key),
  /** Where it listens, when not the address it advertises (0.0.0.0:PORT behind NAT or in a container). */
  runnerListen: Config.option(hostPort(ClusterSetting.RunnerListen.key)),
  /** Shards agents are spread over; every runner of one database must use the same number. */
  shards: numberOf(ClusterSetting.Shards),
  /**
   * A runner whose heartbeat is older than this counts as dead and its shards
   * move. A runner whose connections to the database have closed counts as
   * dead at once (RunnerPresence), so this bounds the failover only for a
   * runner frozen or cut off with them open. Heartbeats and health checks run
   * every third of it.
   */
  lockExpirationSeconds: numberOf(ClusterSetting.LockExpiration),
  /** How often a runner reads shard assignments and messages left in the database. */
  pollSeconds: numberOf(ClusterSetting.Poll),
  /** How long an HTTP send waits for the agent's reply (its runner may be failing over) before a 503. */
  sendTimeoutSeconds: numberOf(ClusterSetting.SendTimeout),
  /**
   * How long answered messages, their replies and decided turns are kept
   * (Pruning.ts): an Idempotency-Key holds at least this long; retried
   * later, it is a new message. At least an hour, above any send timeout.
   */
  retentionSeconds: numberOf(ClusterSetting.Retention),
  /** Seconds without a message before an agent is released (the same setting as `planckclaw serve`). */
  idleSeconds: Config.map(HostConfig, (host) => host.idleSeconds)
})
export type ClusterConfig = Config.Success<typeof ClusterConfig>

const seconds = (value: number) => Duration.millis(Math.round(value * 1000))

/** The engine's settings from ours; all of them, so nothing is left to its environment defaults. */
export const shardingConfig = (config: ClusterConfig): ShardingConfig.ShardingConfig["Service"] => {
  const third = config.lockExpirationSeconds / 3
  return {
    ...ShardingConfig.defaults,
    runnerAddress: Option.some(RunnerAddress.make(config.runnerAddress.host, config.runnerAddress.port)),
    runnerListenAddress: Option.map(config.runnerListen, (listen) => RunnerAddress.make(listen.host, listen.port)),
    shardsPerGroup: config.shards,
    shardLockExpiration: seconds(config.lockExpirationSeconds),
    shardLockRefreshInterval: seconds(third),
    runnerHealthCheckInterval: seconds(third),
    refreshAssignmentsInterval: seconds(config.pollSeconds),
    entityMessagePollInterval: seconds(config.pollSeconds),
    entityMaxIdleTime: seconds(config.idleSeconds),
    // As many agents at once as the runner's memory holds, as before effect/cluster 4 brought a cap (10,000).
    maxResidentEntities: "unbounded",
    // The reply of a message sent to another runner is also read back from the database.
    entityReplyPollInterval: seconds(Math.min(config.pollSeconds, 0.2))
  }
}
