/**
 * The replies agents decided, by message, in PostgreSQL: what the inbox
 * journal (.inbox.jsonl) is to one process, for the cluster. A reply is
 * recorded when it is decided, before its exchange goes to memory; a message
 * the cluster delivers again (its runner died before the reply reached the
 * cluster's storage) finds its reply here, and the agent finishes it
 * (stores the exchange unless memory holds it, answers) without a second
 * turn. Rows of answered messages older than PLANCKCLAW_CLUSTER_RETENTION
 * are pruned with the cluster's own (Pruning.ts).
 *
 * The cluster's own message storage is the inbox itself (accepted messages
 * survive any runner), so `ClusterInbox` keeps nothing of its own on disk.
 */
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type { InboxService, Pending } from "../../memory/Inbox.js"
import type { MemoryError } from "../../memory/MemoryDir.js"
import { resilient } from "../../memory/sql/SqlResilience.js"
import * as IdempotencyStore from "../serve/IdempotencyStore.js"
import { type Columns, type Decided, decidedOf, insertTurn, migrations } from "./DecidedRows.js"
import * as TurnWrites from "./TurnWrites.js"

export type { Decided } from "./DecidedRows.js"

export interface TurnJournalService {
  /** Waits for a database that went away (SqlResilience), as memory does. */
  readonly lookup: (agentId: string, key: string) => Effect.Effect<Option.Option<Decided>, MemoryError>
  readonly record: (agentId: string, key: string, decided: Decided) => Effect.Effect<void, MemoryError>
}

export class TurnJournal extends Context.Service<TurnJournal, TurnJournalService>()("planckclaw/cluster/TurnJournal") {}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Runners starting together race to create the migrations table: the loser tries again.
  yield* Migrator.make({})({ loader: migrations, table: "planckclaw_cluster_migrations" }).pipe(
    Effect.retry({ times: 5, schedule: Schedule.spaced("200 millis"), while: (error) => error._tag === "SqlError" })
  )
  return {
    lookup: (agentId, key) =>
      sql<Columns & { stored: boolean }>`SELECT reply, reply_json, request, stored FROM planckclaw_cluster_turns
        WHERE agent_id = ${agentId} AND message_key = ${key}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), decidedOf)),
        resilient(`reading the decided reply of a message to agent ${agentId}`)
      ),
    record: (agentId, key, decided) =>
      insertTurn(sql, agentId, key, decided).pipe(
        Effect.asVoid,
        resilient(`recording the decided reply of a message to agent ${agentId}`)
      )
  } satisfies TurnJournalService
})

export const layer: Layer.Layer<TurnJournal, SqlError | Migrator.MigrationError, SqlClient.SqlClient> = Layer.effect(TurnJournal, make)

/**
 * The Inbox the agent of an entity talks to: decided replies go to the
 * journal (a failure to record one is logged; the turn still answers), and
 * exchanges memory could not store wait here, in order, for the next turn.
 * Such an exchange is in this process only: once its reply is stored by the
 * cluster, nothing delivers its message again, so a release or a restart
 * loses it, and its caller is told `stored: false` (a redelivery before that,
 * after a crash, finds the decided reply in the journal and stores it).
 *
 * With `writes` (TurnWrites), a reply whose exchange is to be stored waits
 * there and goes with the exchange, in one statement; when the exchange
 * cannot be stored, and in any case before the reply leaves (`delivered`),
 * what still waits is written on its own.
 */
export const clusterInbox = (agentId: string, journal: TurnJournalService, writes?: {
  readonly waiting: TurnWrites.TurnWrites
  readonly sql: SqlClient.SqlClient
}): InboxService => {
  let backlog: ReadonlyArray<Pending> = []
  let nextId = 1
  const notRecorded = (error: MemoryError) =>
    Effect.logError(`agent ${agentId}: could not record a decided reply (${error.message}); a redelivery would run the turn again`)
  /** What waits for this message's exchange, written now. */
  const flush = (pending: Pending) =>
    writes === undefined ? Effect.void : TurnWrites.flush(
      writes.sql,
      agentId,
      writes.waiting,
      pending.key,
      (key, decided) => journal.record(agentId, key, decided)
    ).pipe(Effect.catch(notRecorded))
  return {
    recovered: [],
    // Nothing held open: the journal is a table.
    closeFiles: Effect.void,
    accept: (message) =>
      Effect.sync(() => ({
        id: nextId++,
        channel: message.channel,
        text: message.text,
        ...(message.idempotencyKey === undefined ? {} : { idempotencyKey: message.idempotencyKey }),
        reply: Option.none()
      })),
    answered: (pending, reply, stored) =>
      Effect.suspend(() => {
        if (pending.key === undefined) return Effect.void
        // Kept with the message it answers, so it is never taken for another under the same key.
        const decided: Decided = { reply, stored, request: IdempotencyStore.requestOf(pending) }
        // To be stored: the reply goes with its exchange (TurnWrites.memory).
        if (writes !== undefined && stored) return Effect.sync(() => void writes.waiting.decided.set(pending.key!, decided))
        return journal.record(agentId, pending.key, decided).pipe(Effect.catch(notRecorded))
      }),
    // Waits in this process only (see above): never on disk, whatever the journal holds of it.
    unstored: (pending, reply) =>
      Effect.andThen(
        flush(pending),
        Effect.sync(() => {
          backlog = [...backlog.filter((waiting) => waiting.id !== pending.id), { ...pending, reply: Option.some({ text: reply, stored: true }) }]
          return false
        })
      ),
    stored: (pending) => Effect.sync(() => void (backlog = backlog.filter((waiting) => waiting.id !== pending.id))),
    backlog: Effect.sync(() => backlog),
    // Before the reply leaves: nothing of the turn still waits.
    delivered: flush
  }
}
