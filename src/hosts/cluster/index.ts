/**
 * `planckclaw/cluster`: agents as effect/cluster entities, their memory in
 * PostgreSQL (what `planckclaw serve --cluster` runs). A subpath of its own:
 * it needs the optional peer @effect/sql-pg, and loads effect/cluster,
 * effect/rpc and effect/sql, which the main entry never does.
 */
export * as AgentEntity from "./AgentEntity.js"
export * as ClusterHost from "./ClusterHost.js"
export * as ClusterServe from "./ClusterServe.js"
export * as ClusterSettings from "./ClusterSettings.js"
