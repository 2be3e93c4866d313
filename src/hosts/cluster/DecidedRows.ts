/**
 * A decided reply as a row of planckclaw_cluster_turns holds it, and back,
 * exactly. A TEXT column cannot hold a NUL character, and a reply can carry
 * one (a model echoing a tool's output): such a reply is kept as SQL memory
 * keeps such a text (SqlExactText), as its JSON string in `reply_json`, with
 * `reply` holding it with each NUL as U+FFFD, which is what a runner of an
 * earlier version (it reads `reply` only) answers. `request` names the
 * message the reply answers (IdempotencyStore.requestOf), so a reply is
 * never taken for another message sent under the same key.
 *
 * The usage rows a turn writes go in TEXT columns too: a brain or model name
 * holding a NUL (only a broken backend sends one) is kept with U+FFFD in its
 * place (SqlUsageLedger.storableLine), rather than failing the turn's one
 * statement.
 */
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { jsonOf, storable, textOf } from "../../memory/sql/SqlExactText.js"

/** A message's reply as decided: what it answers, whether its exchange is stored, and (when known) the message it answers. */
export interface Decided {
  readonly reply: string
  readonly stored: boolean
  /** IdempotencyStore.requestOf of the message; absent in rows written before it was kept. */
  readonly request?: string | undefined
}

/** The columns of a decided reply. */
export interface Columns {
  readonly reply: string
  readonly reply_json: string | null
  readonly request: string | null
}

const columnsOf = (decided: Decided): Columns => ({
  reply: storable(decided.reply),
  reply_json: jsonOf(decided.reply),
  request: decided.request ?? null
})

/** The decided reply of message `key` as its row, unless the message has one already. */
export const insertTurn = (sql: SqlClient.SqlClient, agentId: string, key: string, decided: Decided) => {
  const columns = columnsOf(decided)
  return sql`INSERT INTO planckclaw_cluster_turns (agent_id, message_key, reply, reply_json, request, stored)
    VALUES (${agentId}, ${key}, ${columns.reply}, ${columns.reply_json}::text, ${columns.request}::text, ${decided.stored})
    ON CONFLICT (agent_id, message_key) DO NOTHING`
}

/** The decided reply of a row: `reply_json`'s when it matches `reply` (both are written together), else `reply`. */
export const decidedOf = (row: Columns & { readonly stored: boolean }): Decided => ({
  reply: textOf(row.reply, row.reply_json),
  stored: row.stored,
  ...(row.request === null ? {} : { request: row.request })
})

/** Whether `decided` was kept for another message than the one `request` names (a key reused). */
export const answersAnother = (decided: Decided, request: string): boolean =>
  decided.request !== undefined && decided.request !== request

/**
 * The table's migrations, in planckclaw_cluster_migrations: they only ever
 * add (a new change is a new numbered entry), so runners of an earlier
 * version go on reading and writing the table while others start.
 */
export const migrations = Migrator.fromRecord({
  "1_turns": Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`CREATE TABLE IF NOT EXISTS planckclaw_cluster_turns (
      agent_id TEXT NOT NULL,
      message_key TEXT NOT NULL,
      reply TEXT NOT NULL,
      stored BOOLEAN NOT NULL,
      decided_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
      PRIMARY KEY (agent_id, message_key)
    )`.pipe(
      Effect.andThen(sql`CREATE INDEX IF NOT EXISTS planckclaw_cluster_turns_decided ON planckclaw_cluster_turns (decided_at)`)
    )),
  "2_exact_replies": Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`ALTER TABLE planckclaw_cluster_turns ADD COLUMN IF NOT EXISTS reply_json TEXT`),
  "3_requests": Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`ALTER TABLE planckclaw_cluster_turns ADD COLUMN IF NOT EXISTS request TEXT`)
})
