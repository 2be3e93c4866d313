/**
 * Retention of the cluster's rows: answered messages, their replies and the
 * turns agents decided are deleted once older than
 * PLANCKCLAW_CLUSTER_RETENTION, by a fiber each runner keeps (on the
 * Clock's schedule, so a TestClock drives it). Until then an
 * Idempotency-Key holds; retried later, it is a new message.
 *
 * Only finished work goes. effect/cluster's SqlMessageStorage keeps a
 * request in `cluster_messages` (id: a Snowflake, whose high bits are its
 * creation time; message_id: `Agent/<id>/Send/<key>`, the primary key that
 * makes a retry the same message) and its replies in `cluster_replies`
 * (request_id); `processed` with a `last_reply_id` means the final reply is
 * stored and nothing will deliver it again (the engine reads only
 * unprocessed rows). Acks and interrupts of a request are rows of their own
 * with its request_id and go with it. A message still unprocessed stays
 * whatever its age, and so do its decided turn and exchange key: a
 * redelivery must still find them.
 */
import * as MachineId from "effect/cluster/MachineId"
import * as Snowflake from "effect/cluster/Snowflake"
import * as SqlClient from "effect/sql/SqlClient"
import { SqlError } from "effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { describe, isTransient } from "../../memory/sql/SqlResilience.js"

export interface Pruned {
  readonly messages: number
  readonly turns: number
  readonly exchanges: number
}

export interface PruningOptions {
  readonly retentionSeconds: number
  /** Rows deleted per statement, so no statement holds locks long. */
  readonly batch?: number
}

/** Two-key advisory lock of its own (the engine's shard locks have another first key): one runner prunes at a time. */
const LOCK = [0x706c616e, 0x7072756e] as const

/** How often a runner prunes: a quarter of the retention, at most hourly. */
export const interval = (retentionSeconds: number): Duration.Duration =>
  Duration.seconds(Math.min(3600, retentionSeconds / 4))

const countOf = (rows: ReadonlyArray<{ readonly n: number | string | bigint }>) => Number(rows[0]?.n ?? 0)

/** One pass: every finished row older than the retention, batch by batch, each batch one transaction. */
export const pruneOnce = (options: PruningOptions): Effect.Effect<Pruned, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const batch = options.batch ?? 5000
    const cutoff = (yield* Clock.currentTimeMillis) - options.retentionSeconds * 1000
    // Snowflakes start at 2025-01-01: nothing older can exist.
    const cutoffId = String(Snowflake.make({ timestamp: Math.max(cutoff, Snowflake.constEpochMillis), machineId: MachineId.make(0), sequence: 0 }))
    const before = new Date(cutoff)

    const messages = sql<{ n: bigint }>`WITH old AS (
        SELECT id FROM cluster_messages WHERE kind = 0 AND processed AND last_reply_id IS NOT NULL AND id < CAST(${cutoffId} AS BIGINT)
        LIMIT ${batch}
      ), gone AS (
        DELETE FROM cluster_messages m USING old WHERE m.id = old.id RETURNING m.request_id
      ), replies AS (
        DELETE FROM cluster_replies r WHERE r.request_id IN (SELECT request_id FROM gone)
      ), notes AS (
        DELETE FROM cluster_messages n WHERE n.kind <> 0 AND n.request_id IN (SELECT request_id FROM gone)
      )
      SELECT count(*) AS n FROM gone`
    const turns = sql<{ n: bigint }>`WITH gone AS (
        DELETE FROM planckclaw_cluster_turns WHERE (agent_id, message_key) IN (
          SELECT t.agent_id, t.message_key FROM planckclaw_cluster_turns t
          WHERE t.decided_at < ${before} AND NOT EXISTS (SELECT 1 FROM cluster_messages m
            WHERE m.message_id = 'Agent/' || t.agent_id || '/Send/' || t.message_key AND NOT m.processed)
          LIMIT ${batch}
        ) RETURNING 1
      ) SELECT count(*) AS n FROM gone`
    // Only the cluster's exchange keys (`idem:`, `msg:`; AgentEntity.messageKey): memory's own inbox keys are not ours.
    const exchanges = sql<{ n: bigint }>`WITH gone AS (
        DELETE FROM planckclaw_exchanges WHERE (agent_id, key) IN (
          SELECT e.agent_id, e.key FROM planckclaw_exchanges e
          WHERE e.stored < ${before} AND (e.key LIKE 'idem:%' OR e.key LIKE 'msg:%')
            AND NOT EXISTS (SELECT 1 FROM cluster_messages m
              WHERE m.message_id = 'Agent/' || e.agent_id || '/Send/' || e.key AND NOT m.processed)
          LIMIT ${batch}
        ) RETURNING 1
      ) SELECT count(*) AS n FROM gone`

    /** Batches until one comes back short; none at all when another runner is pruning. */
    const drain = (statement: Effect.Effect<ReadonlyArray<{ n: number | string | bigint }>, SqlError>) =>
      Effect.gen(function*() {
        let total = 0
        for (let last = batch; last >= batch;) {
          last = yield* sql.withTransaction(Effect.gen(function*() {
            const locked = yield* sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${LOCK[0]}, ${LOCK[1]}) AS locked`
            return locked[0]?.locked === true ? countOf(yield* statement) : 0
          }))
          total += last
        }
        return total
      })

    // Turns and exchange keys first: they are kept while their message is unfinished, which the messages table tells.
    const turnCount = yield* drain(turns)
    const exchangeCount = yield* drain(exchanges)
    const messageCount = yield* drain(messages)
    return { messages: messageCount, turns: turnCount, exchanges: exchangeCount }
  })

/**
 * The pruning fiber: a pass at start and every `interval`. A pass that fails
 * is one log line and the next pass tries again; a database that is away is
 * not worth a line of its own (everything else says so).
 */
export const layer = (options: PruningOptions): Layer.Layer<never, never, SqlClient.SqlClient> =>
  Layer.effectDiscard(
    pruneOnce(options).pipe(
      Effect.tap((pruned) =>
        pruned.messages + pruned.turns + pruned.exchanges === 0 ? Effect.void : Effect.logInfo(
          `pruned ${pruned.messages} answered messages, ${pruned.turns} decided turns and ${pruned.exchanges} exchange keys ` +
            `older than ${options.retentionSeconds} s (PLANCKCLAW_CLUSTER_RETENTION)`
        )
      ),
      Effect.catch((error) =>
        error instanceof SqlError && isTransient(error)
          ? Effect.void
          : Effect.logWarning(`could not prune the cluster's old rows: ${describe(error)}; trying again later`)
      ),
      Effect.repeat(Schedule.spaced(interval(options.retentionSeconds))),
      Effect.forkScoped
    )
  )
