/**
 * Everything an agent keeps, in PostgreSQL, as the layers Agent.layer needs
 * besides its Claws: Memory (SqlMemory), Inbox (SqlInbox), Compactor (the
 * usual Compactor over SqlFoldStore: one transaction per commit) and the
 * Brain recording usage (SqlUsageLedger). Give it the bridge's Brain, a
 * SqlClient (PgClient) and the process's one CompactionLocks
 * (SqlCompactionLocks.layer, shared by all its agents); the migrations run
 * first (SqlMigrations.layer).
 *
 *   Agent.layer.pipe(
 *     Layer.provideMerge(SqlAgentMemory.layer(agentId, options)),
 *     Layer.provide(Layer.mergeAll(brain, claws, compactionLocks)),
 *     Layer.provideMerge(pgClient))
 */
import type * as SqlClient from "effect/sql/SqlClient"
import type * as ConfigError from "effect/Config"
import * as Layer from "effect/Layer"
import { Brain } from "../../ports/Brain.js"
import * as Compactor from "../../agent/Compactor.js"
import { FoldStore } from "../../memory/FoldStore.js"
import { Inbox } from "../../memory/Inbox.js"
import { Memory } from "../../memory/Memory.js"
import type { MemoryError } from "../../memory/MemoryDir.js"
import type { CompactionLocks } from "../../memory/sql/SqlCompactionLocks.js"
import * as SqlFoldStore from "../../memory/sql/SqlFoldStore.js"
import * as SqlInbox from "../../memory/sql/SqlInbox.js"
import * as SqlMemory from "../../memory/sql/SqlMemory.js"
import * as SqlUsageLedger from "../../usage/SqlUsageLedger.js"

export type SqlAgentMemoryOptions = SqlMemory.SqlMemoryOptions & SqlInbox.SqlInboxOptions

/** The agent's Memory and its FoldStore (for a Compactor), in the database. */
export const memoryLayer = (
  agentId: string,
  options: SqlMemory.SqlMemoryOptions = {}
): Layer.Layer<Memory | FoldStore, MemoryError, SqlClient.SqlClient | CompactionLocks> =>
  Layer.merge(
    Layer.effect(Memory, SqlMemory.make(agentId, options)),
    Layer.effect(FoldStore, SqlFoldStore.make(agentId, options))
  )

export const layer = (
  agentId: string,
  options: SqlAgentMemoryOptions = {}
): Layer.Layer<
  Memory | Inbox | Compactor.Compactor | Brain,
  MemoryError | ConfigError.ConfigError,
  Brain | SqlClient.SqlClient | CompactionLocks
> => {
  // Turns and compactions alike answer through the recording Brain.
  const brain = SqlUsageLedger.layer(agentId, options.retry)
  return Layer.effect(Compactor.Compactor, Compactor.make).pipe(
    Layer.provideMerge(brain),
    Layer.provideMerge(memoryLayer(agentId, options)),
    Layer.merge(Layer.effect(Inbox, SqlInbox.make(agentId, options)))
  )
}
