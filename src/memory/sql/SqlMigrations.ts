/**
 * The tables of memory in PostgreSQL, created by effect/sql's migrator at
 * start-up (the record below, in code: nothing to ship beside the bundle).
 * Migrations only ever add: a new schema change is a new numbered entry.
 *
 * - `planckclaw_agents`: one row per agent: the summary (NULL: no
 *   summary.md), the persona (NULL: no soul.md, the host's default applies),
 *   the next history sequence number, the epoch (bumped when an import
 *   replaces history, so a compaction planned before it cannot commit), and
 *   the compaction lease.
 * - `planckclaw_history`: the lines of history.jsonl in order, by
 *   (agent_id, seq): the primary key's index serves every tail read
 *   backwards, so a read costs the same for 10 lines or 10 million.
 * - `planckclaw_exchanges`: the journal keys of exchanges stored, so a
 *   replay after a crash is not stored twice (folded ones included).
 * - `planckclaw_inbox`: messages accepted and their decided replies.
 * - `planckclaw_usage`: one row per brain answer.
 * - `planckclaw_archives` and `planckclaw_archived_history` (2): what
 *   `/forget` moved away, by (agent_id, stamp): the summary as it was, and
 *   the history rows as they were (SqlForget.ts).
 * - `planckclaw_schedules` (3): one row per agent with a schedule: its
 *   entries as schedules.json holds them (hosts/cluster/ClusterSchedules.ts).
 * - (4) `summary_json` (agents, archives) and `text_json`, `channel_json`,
 *   `reply_json` (inbox): a text holding a NUL, which a text column refuses,
 *   as its JSON string beside the column (SqlExactText.ts).
 */
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"

export const MIGRATIONS_TABLE = "planckclaw_migrations"

const createTables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE planckclaw_agents (
    agent_id text PRIMARY KEY,
    summary text,
    soul text,
    history_unterminated boolean NOT NULL DEFAULT false,
    next_seq bigint NOT NULL DEFAULT 1,
    epoch bigint NOT NULL DEFAULT 1,
    compacting_by text,
    compacting_until timestamptz
  )`
  // role/content: the entry; line: the line exactly as the file had it, when
  // it is not what the entry encodes to (an imported oddity, or content with
  // a NUL, which a text column cannot hold).
  yield* sql`CREATE TABLE planckclaw_history (
    agent_id text NOT NULL,
    seq bigint NOT NULL,
    role text,
    content text,
    line text,
    created timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, seq)
  )`
  yield* sql`CREATE TABLE planckclaw_exchanges (
    agent_id text NOT NULL,
    key text NOT NULL,
    stored timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, key)
  )`
  yield* sql`CREATE INDEX planckclaw_exchanges_by_time ON planckclaw_exchanges (agent_id, stored)`
  yield* sql`CREATE TABLE planckclaw_inbox (
    id bigserial PRIMARY KEY,
    agent_id text NOT NULL,
    key text NOT NULL,
    idempotency_key text,
    channel text NOT NULL,
    text text NOT NULL,
    reply text,
    stored boolean NOT NULL DEFAULT false,
    unstored boolean NOT NULL DEFAULT false,
    delivered boolean NOT NULL DEFAULT false,
    accepted timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE INDEX planckclaw_inbox_open ON planckclaw_inbox (agent_id, id) WHERE NOT delivered OR unstored`
  yield* sql`CREATE UNIQUE INDEX planckclaw_inbox_idempotency ON planckclaw_inbox (agent_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL`
  yield* sql`CREATE TABLE planckclaw_usage (
    id bigserial PRIMARY KEY,
    agent_id text NOT NULL,
    at timestamptz NOT NULL,
    kind text NOT NULL,
    brain text NOT NULL,
    model text NOT NULL,
    ms double precision NOT NULL,
    input bigint NOT NULL,
    output bigint NOT NULL,
    cache_write bigint NOT NULL,
    cache_read bigint NOT NULL
  )`
  yield* sql`CREATE INDEX planckclaw_usage_by_agent ON planckclaw_usage (agent_id, id)`
})

// `request`: the forget's own key, so a forget run again after its COMMIT's answer was lost finds itself.
const createArchives = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE planckclaw_archives (
    agent_id text NOT NULL,
    stamp text NOT NULL,
    request text NOT NULL,
    summary text,
    history_unterminated boolean NOT NULL DEFAULT false,
    history_lines bigint NOT NULL DEFAULT 0,
    archived timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, stamp)
  )`
  yield* sql`CREATE UNIQUE INDEX planckclaw_archives_request ON planckclaw_archives (agent_id, request)`
  yield* sql`CREATE TABLE planckclaw_archived_history (
    agent_id text NOT NULL,
    stamp text NOT NULL,
    seq bigint NOT NULL,
    role text,
    content text,
    line text,
    created timestamptz NOT NULL,
    PRIMARY KEY (agent_id, stamp, seq),
    FOREIGN KEY (agent_id, stamp) REFERENCES planckclaw_archives (agent_id, stamp) ON DELETE CASCADE
  )`
})

const createSchedules = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE planckclaw_schedules (
    agent_id text PRIMARY KEY,
    entries text NOT NULL
  )`
})

// Added columns only: a runner of an earlier version goes on reading and writing the plain ones.
const addExactTexts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE planckclaw_agents ADD COLUMN IF NOT EXISTS summary_json text`
  yield* sql`ALTER TABLE planckclaw_archives ADD COLUMN IF NOT EXISTS summary_json text`
  yield* sql`ALTER TABLE planckclaw_inbox ADD COLUMN IF NOT EXISTS text_json text,
    ADD COLUMN IF NOT EXISTS channel_json text, ADD COLUMN IF NOT EXISTS reply_json text`
})

export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "1_memory": createTables,
  "2_forget_archive": createArchives,
  "3_schedules": createSchedules,
  "4_exact_texts": addExactTexts
}

/**
 * Runs the migrations not yet applied. Runners starting together race to
 * create the migrations table; the loser tries again and finds it (the
 * migrator itself then serialises on a table lock).
 */
export const run: Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  Migrator.MigrationError | SqlError,
  SqlClient.SqlClient
> = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: MIGRATIONS_TABLE }).pipe(
  Effect.retry({ times: 3, schedule: Schedule.spaced("100 millis"), while: (error) => error._tag === "SqlError" })
)

/** The migrations, run when the layer is built. */
export const layer: Layer.Layer<never, Migrator.MigrationError | SqlError, SqlClient.SqlClient> = Layer.effectDiscard(run)
