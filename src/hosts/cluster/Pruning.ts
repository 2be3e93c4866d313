/**
 * Retention of the cluster's rows: answered messages, their replies and the
 * turns agents decided are deleted once older than
 * PLANCKCLAW_CLUSTER_RETENTION, by a fiber each runner keeps (on the
 * Clock's schedule, so a TestClock drives it). Until then an
 * Idempotency-Key holds; retried later, it is a new message.
 *
 * Only finished work goes. effect/cluster's SqlMessageStorage keeps a
 * request in `cluster_messages` (id: a Snowflake, whose high bits are its
 * creation time; message_id: `Agent/<id>/Send/<key>`, or that key's SHA-256
 * in hex when it is longer than 255 characters, the unique key that makes a
 * retry the same message) and its replies in `cluster_replies`
 * (request_id); `processed` with a `last_reply_id` means the final reply is
 * stored and nothing will deliver it again (the engine reads only
 * unprocessed rows). Acks and interrupts of a request are rows of their own
 * with its request_id and go with it.
 *
 * A message, its decided turn and its exchange key go together, in one
 * statement, once the message is answered and all three are older than the
 * retention: the message by its Snowflake (when it was accepted), the turn
 * and the key by when they were written (when the turn ended, or later).
 * Taken one by one on one cutoff, a turn that took long left a message
 * deleted and its turn kept, and the same key sent then with another text,
 * a new message, was answered with the old turn's reply. A turn or key whose
 * message is no longer there (pruned by an earlier version) goes on its own,
 * once old; one whose message is still unanswered stays whatever its age: a
 * redelivery must still find it.
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

/** The value of a payload's "key" as JSON spells it: no quote of a string's text is unescaped, so only a property name matches. */
const KEY_IN_PAYLOAD = String.raw`"key":"((?:[^"\\]|\\.)*)"`

/** How often a runner prunes: a quarter of the retention, at most hourly. */
export const interval = (retentionSeconds: number): Duration.Duration =>
  Duration.seconds(Math.min(3600, retentionSeconds / 4))

/** Rows deleted by one batch, and how many units (message, turn, key) it took: a batch of fewer than asked is the last. */
interface Batch {
  readonly taken: number | string | bigint
  readonly messages: number | string | bigint
  readonly turns: number | string | bigint
  readonly exchanges: number | string | bigint
}

/** One pass: every finished row older than the retention, batch by batch, each batch one transaction. */
export const pruneOnce = (options: PruningOptions): Effect.Effect<Pruned, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const batch = options.batch ?? 5000
    const cutoff = (yield* Clock.currentTimeMillis) - options.retentionSeconds * 1000
    // Snowflakes start at 2025-01-01: nothing older can exist.
    const cutoffId = String(Snowflake.make({ timestamp: Math.max(cutoff, Snowflake.constEpochMillis), machineId: MachineId.make(0), sequence: 0 }))
    const before = new Date(cutoff)
    /** The row of `cluster_messages` of the message the columns `agent` and `key` name, under either message_id the engine gives it. */
    const messageOf = (agent: string, key: string) => {
      const plain = `'Agent/' || ${agent} || '/Send/' || ${key}`
      return sql.literal(`SELECT 1 FROM cluster_messages m
        WHERE m.message_id IN (${plain}, encode(sha256(convert_to(${plain}, 'UTF8')), 'hex'))`)
    }

    // Answered messages with their turn and key, when those are old too. A message's key is in its message_id,
    // or, under a digest, in its payload: the top level's "key" (AgentEntity.Send). Read as text (a JSON cast
    // refuses a whole payload whose text holds an escaped NUL), then as the JSON string it is.
    const messages = sql<Batch>`WITH old AS (
        SELECT c.id, c.agent_id, c.key FROM (
          SELECT m.id, m.entity_id AS agent_id, CASE
            WHEN m.entity_type <> 'Agent' OR m.tag <> 'Send' THEN NULL
            WHEN left(m.message_id, char_length(m.entity_id) + 12) = 'Agent/' || m.entity_id || '/Send/'
              THEN substr(m.message_id, char_length(m.entity_id) + 13)
            ELSE ('"' || substring(m.payload FROM ${KEY_IN_PAYLOAD}) || '"')::json #>> '{}'
          END AS key
          FROM cluster_messages m
          WHERE m.kind = 0 AND m.processed AND m.last_reply_id IS NOT NULL AND m.id < CAST(${cutoffId} AS BIGINT)
        ) c
        WHERE NOT EXISTS (SELECT 1 FROM planckclaw_cluster_turns t
            WHERE t.agent_id = c.agent_id AND t.message_key = c.key AND t.decided_at >= ${before})
          AND NOT EXISTS (SELECT 1 FROM planckclaw_exchanges e WHERE e.agent_id = c.agent_id AND e.key = c.key AND e.stored >= ${before})
        LIMIT ${batch}
      ), gone AS (
        DELETE FROM cluster_messages m USING old WHERE m.id = old.id RETURNING m.request_id
      ), replies AS (
        DELETE FROM cluster_replies r WHERE r.request_id IN (SELECT request_id FROM gone)
      ), notes AS (
        DELETE FROM cluster_messages n WHERE n.kind <> 0 AND n.request_id IN (SELECT request_id FROM gone)
      ), turns AS (
        DELETE FROM planckclaw_cluster_turns t USING old WHERE t.agent_id = old.agent_id AND t.message_key = old.key RETURNING 1
      ), keys AS (
        DELETE FROM planckclaw_exchanges e USING old WHERE e.agent_id = old.agent_id AND e.key = old.key RETURNING 1
      )
      SELECT (SELECT count(*) FROM old) AS taken, (SELECT count(*) FROM gone) AS messages,
        (SELECT count(*) FROM turns) AS turns, (SELECT count(*) FROM keys) AS exchanges`
    // Old turns (with their key, when old too) whose message is gone.
    const turns = sql<Batch>`WITH old AS (
        SELECT t.agent_id, t.message_key FROM planckclaw_cluster_turns t
        WHERE t.decided_at < ${before} AND NOT EXISTS (${messageOf("t.agent_id", "t.message_key")})
          AND NOT EXISTS (SELECT 1 FROM planckclaw_exchanges e
            WHERE e.agent_id = t.agent_id AND e.key = t.message_key AND e.stored >= ${before})
        LIMIT ${batch}
      ), turns AS (
        DELETE FROM planckclaw_cluster_turns t USING old WHERE t.agent_id = old.agent_id AND t.message_key = old.message_key RETURNING 1
      ), keys AS (
        DELETE FROM planckclaw_exchanges e USING old WHERE e.agent_id = old.agent_id AND e.key = old.message_key RETURNING 1
      )
      SELECT (SELECT count(*) FROM old) AS taken, 0 AS messages, (SELECT count(*) FROM turns) AS turns, (SELECT count(*) FROM keys) AS exchanges`
    // Old exchange keys whose message and turn are gone. Only the cluster's (`idem:`, `msg:`; AgentEntity.messageKey):
    // memory's own inbox keys are not ours.
    const exchanges = sql<Batch>`WITH old AS (
        SELECT e.agent_id, e.key FROM planckclaw_exchanges e
        WHERE e.stored < ${before} AND (e.key LIKE 'idem:%' OR e.key LIKE 'msg:%')
          AND NOT EXISTS (SELECT 1 FROM planckclaw_cluster_turns t WHERE t.agent_id = e.agent_id AND t.message_key = e.key)
          AND NOT EXISTS (${messageOf("e.agent_id", "e.key")})
        LIMIT ${batch}
      ), keys AS (
        DELETE FROM planckclaw_exchanges e USING old WHERE e.agent_id = old.agent_id AND e.key = old.key RETURNING 1
      )
      SELECT (SELECT count(*) FROM old) AS taken, 0 AS messages, 0 AS turns, (SELECT count(*) FROM keys) AS exchanges`

    let total: Pruned = { messages: 0, turns: 0, exchanges: 0 }
    /** Batches until one comes back short; none at all when another runner is pruning. */
    const drain = (statement: Effect.Effect<ReadonlyArray<Batch>, SqlError>) =>
      Effect.gen(function*() {
        for (let taken = batch; taken >= batch;) {
          const row = yield* sql.withTransaction(Effect.gen(function*() {
            const locked = yield* sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${LOCK[0]}, ${LOCK[1]}) AS locked`
            return locked[0]?.locked === true ? (yield* statement)[0] : undefined
          }))
          taken = Number(row?.taken ?? 0)
          total = {
            messages: total.messages + Number(row?.messages ?? 0),
            turns: total.turns + Number(row?.turns ?? 0),
            exchanges: total.exchanges + Number(row?.exchanges ?? 0)
          }
        }
      })

    // Messages first, with what is theirs; then what is left of messages pruned before.
    yield* drain(messages)
    yield* drain(turns)
    yield* drain(exchanges)
    return total
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
