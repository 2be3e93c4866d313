/**
 * `planckclaw/cluster`: agents as effect/cluster entities, their memory in
 * PostgreSQL (what `planckclaw serve --cluster` runs). A subpath of its own:
 * it needs the optional peer @effect/sql-pg, and loads effect/cluster,
 * effect/rpc and effect/sql, which the main entry never does.
 * test/PublicApi.test.ts pins these names too.
 */

// A runner of the cluster with its agents and the HTTP API (ClusterServe.layer), and its settings.
export * as ClusterServe from "./ClusterServe.js"
export * as ClusterSettings from "./ClusterSettings.js"

// The agent host of a runner (the AgentHost the HTTP API consumes), and the entity each agent is.
export * as AgentEntity from "./AgentEntity.js"
export * as ClusterHost from "./ClusterHost.js"
