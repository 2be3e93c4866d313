/**
 * What keeps a compaction's lease alive (SqlFoldStore): a session-level
 * PostgreSQL advisory lock per agent, on one connection of this process,
 * reserved while any compaction here holds a lock and given back to the pool
 * after. PostgreSQL ends a dead client's session and its locks with it (a
 * process SIGKILLed, a machine gone), as it ends the cluster engine's shard
 * locks, which are session advisory locks too: the lease ends when the
 * runner's shards can move, not after a time.
 *
 * A process cut off from the database keeps its locks for as long as the
 * server keeps its session (its TCP keepalive settings bound that). Its
 * shards may move sooner: on PostgreSQL 14 and later the engine's own lock
 * session ends once idle for the shard lock expiration, and a compaction of
 * one of its agents elsewhere meanwhile is refused as busy. Once the server
 * has ended the session, another process may take the lease over; the
 * cut-off one, still folding, is refused at its commit by the lease's token
 * (SqlFoldStore.commitFold).
 */
import * as crypto from "node:crypto"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as RcRef from "effect/RcRef"
import type * as Scope from "effect/Scope"
import { isTransient } from "./SqlResilience.js"

/** Whether the lock was taken, else who holds it: this process, or another session. */
export type Hold = "taken" | "held here" | "held elsewhere"

export interface CompactionLocksService {
  /**
   * Holds the agent's compaction lock until the scope closes, unless another
   * session holds it or a compaction of this process already does (a
   * session's advisory locks are its own to take again: refused here).
   */
  readonly hold: (agentId: string) => Effect.Effect<Hold, SqlError, Scope.Scope>
}

export class CompactionLocks extends Context.Service<
  CompactionLocks,
  CompactionLocksService
>()("planckclaw/memory/sql/CompactionLocks") {}

/**
 * The first key of the cluster engine's shard locks (effect/cluster's
 * SqlRunnerStorage, tables prefixed `cluster`): they take the two-key form
 * too, (this namespace, the shard's number), an FNV-1a hash of
 * `effect-cluster:cluster` that its source declares never to change.
 */
export const ENGINE_LOCK_NAMESPACE = -1455371005

/**
 * The agent's lock: two 32-bit keys from a hash of its id, the first never
 * the engine's namespace, so a compaction lock and a shard lock never meet;
 * a collision of two agents' 64 bits would only make one compaction wait for
 * the other.
 */
export const lockKeys = (agentId: string): readonly [number, number] => {
  const digest = crypto.createHash("sha256").update(`planckclaw compaction\0${agentId}`).digest()
  const first = digest.readInt32BE(0)
  return [first === ENGINE_LOCK_NAMESPACE ? ~first : first, digest.readInt32BE(4)]
}

/** One per process (per pool): every agent's compaction shares its session. */
export const make: Effect.Effect<CompactionLocksService, never, SqlClient.SqlClient | Scope.Scope> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const session = yield* RcRef.make({
    acquire: Effect.tap(sql.reserve, (connection) =>
      // Back to the pool with no lock of ours on it, should one not have been given back.
      Effect.addFinalizer(() => Effect.ignore(connection.executeRaw("SELECT pg_advisory_unlock_all()", []))))
  })
  const heldHere = new Set<string>()

  const hold = (agentId: string) =>
    Effect.gen(function*() {
      const connection = yield* RcRef.get(session)
      const keys = lockKeys(agentId)
      return yield* Effect.acquireRelease(
        Effect.suspend((): Effect.Effect<Hold, SqlError> => {
          if (heldHere.has(agentId)) return Effect.succeed("held here")
          // Claimed before the query, so a second hold here meanwhile is refused, not let in again by the session.
          heldHere.add(agentId)
          return connection.executeValues("SELECT pg_try_advisory_lock($1, $2)", keys).pipe(
            Effect.map((rows) => rows[0]?.[0] === true ? "taken" : "held elsewhere"),
            Effect.onExit((exit) =>
              Exit.isSuccess(exit) && exit.value === "taken" ? Effect.void : Effect.sync(() => heldHere.delete(agentId))
            ),
            // The session is gone (the database restarted): the next hold reserves another.
            Effect.tapError((error) => isTransient(error) ? RcRef.invalidate(session) : Effect.void)
          )
        }),
        (held) =>
          held === "taken"
            ? Effect.andThen(
              Effect.sync(() => heldHere.delete(agentId)),
              Effect.ignore(connection.executeRaw("SELECT pg_advisory_unlock($1, $2)", keys))
            )
            : Effect.void
      )
    })

  return { hold } satisfies CompactionLocksService
})

export const layer: Layer.Layer<CompactionLocks, never, SqlClient.SqlClient> = Layer.effect(CompactionLocks, make)
