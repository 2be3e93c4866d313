/** PostgreSQL: memory moved there (`planckclaw memory`), and the cluster of runners (`serve --cluster`). */
import type { NumberSetting, TextSetting } from "../Setting.js"

export const DatabaseUrl = {
  key: "PLANCKCLAW_DATABASE_URL",
  kind: "text",
  accepts: "postgres:// URL",
  defaultText: "(required there)",
  description: "the database, postgres://USER:PASSWORD@HOST:PORT/DATABASE; its password is never logged",
  details: "The cluster's tables (`cluster_*`), memory's (`planckclaw_*`) and the decided replies " +
    "(`planckclaw_cluster_turns`) are created at start-up.",
  secret: true
} as const satisfies TextSetting

export const RunnerAddress = {
  key: "PLANCKCLAW_RUNNER_ADDRESS",
  kind: "text",
  accepts: "HOST:PORT",
  defaultText: "(required for --cluster)",
  description: "serve --cluster: where this runner is reached by its peers",
  details: "Always given explicitly: the runner never reads `HOST`/`PORT` from the environment."
} as const satisfies TextSetting

export const RunnerListen = {
  key: "PLANCKCLAW_RUNNER_LISTEN",
  kind: "text",
  accepts: "HOST:PORT",
  defaultText: "PLANCKCLAW_RUNNER_ADDRESS",
  description: "where the runner listens, when not the address it advertises (NAT, containers)",
  details: "`0.0.0.0:34431` in a container"
} as const satisfies TextSetting

export const Shards = {
  key: "PLANCKCLAW_CLUSTER_SHARDS",
  kind: "integer",
  min: 1,
  max: 10_000,
  default: 300,
  description: "shards agents are spread over; the same on every runner of one database"
} as const satisfies NumberSetting

export const LockExpiration = {
  key: "PLANCKCLAW_CLUSTER_LOCK_EXPIRATION",
  kind: "seconds",
  min: 3,
  max: 600,
  default: 10,
  description: "seconds after which a silent runner counts as dead and its agents move",
  details: "A runner whose process dies is counted out sooner, once PostgreSQL has closed its connections (at the " +
    "next PLANCKCLAW_CLUSTER_POLL); this bound is for a runner frozen or cut off with its connections still open, " +
    "or a machine gone without closing them. Heartbeats and lock refreshes run every third of it and must finish " +
    "within that third, so on a slow database or a loaded machine a short value makes healthy runners give up " +
    "their shards; 6 s is the lowest we found steady on a busy 2-core machine."
} as const satisfies NumberSetting

export const Poll = {
  key: "PLANCKCLAW_CLUSTER_POLL",
  kind: "seconds",
  min: 0.05,
  max: 60,
  default: 1,
  description: "seconds between reads of shard assignments and stored messages (those of a dead runner)"
} as const satisfies NumberSetting

export const SendTimeout = {
  key: "PLANCKCLAW_CLUSTER_SEND_TIMEOUT",
  kind: "seconds",
  min: 1,
  max: 3600,
  default: 60,
  description: "seconds an HTTP message waits for its agent (maybe failing over) before a 503",
  details: "The message is kept and still answered. A streamed message is bounded only until it is taken (its `accepted` event); its reply is then awaited however long the turn takes."
} as const satisfies NumberSetting

export const Retention = {
  key: "PLANCKCLAW_CLUSTER_RETENTION",
  kind: "seconds",
  min: 3600,
  max: 3650 * 86_400,
  default: 7 * 86_400,
  description: "seconds answered messages and their Idempotency-Keys are kept before pruning (7 days)",
  details: "An `Idempotency-Key` retried later is a new message. Each runner prunes older rows at start and then " +
    "every quarter of it (at most hourly)."
} as const satisfies NumberSetting

export const group = {
  title: "PostgreSQL (planckclaw memory, serve --cluster)",
  settings: [DatabaseUrl, RunnerAddress, RunnerListen, Shards, LockExpiration, Poll, SendTimeout, Retention]
} as const
