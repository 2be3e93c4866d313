/**
 * `planckclaw/cluster`: agents as @effect/cluster entities, their memory in
 * PostgreSQL (what `planckclaw serve --cluster` runs). A subpath of its own:
 * it needs the optional peers @effect/cluster, @effect/rpc, @effect/sql and
 * @effect/sql-pg, which the main entry never loads.
 */
export * as AgentEntity from "./AgentEntity.js"
export * as ClusterHost from "./ClusterHost.js"
export * as ClusterServe from "./ClusterServe.js"
export * as ClusterSettings from "./ClusterSettings.js"
