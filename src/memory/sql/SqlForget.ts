/**
 * Forgetting in PostgreSQL, as Forget.ts is for files: the agent's history
 * rows and summary move into an archive named after the UTC time
 * (`planckclaw_archives` and `planckclaw_archived_history`, keyed by
 * (agent_id, stamp)), in one transaction: the old memory or the fresh one,
 * never a mix. Nothing is deleted. A second forget within the same second
 * gets `<stamp>-2`, `-3`… as the files' directories do.
 *
 * What stays: the persona, the usage ledger, the inbox, and the exchange
 * keys (`planckclaw_exchanges`). The keys are the proof an exchange is
 * stored; it still is (in the archive), so a replay after a crash must not
 * store it again into the fresh history. The history's epoch is bumped, so
 * a compaction planned before the forget cannot commit the old
 * conversation's summary into the fresh memory.
 *
 * Each forget carries its own key (`request`): run again after a lost
 * answer to its COMMIT (SqlResilience.ts), it finds its archive instead of
 * archiving what came after.
 */
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ForgetPreview, Forgotten } from "../Forget.js"
import { exactBytes, jsonOf, storable, textOf } from "./SqlExactText.js"

/** What the archive's parts are called in a Forgotten (the files' names would say files that do not exist). */
export const PARTS = { summary: "summary", history: "history" } as const

/** Where a forget's archive is, for people: a place in the database, never a host path. */
export const archiveName = (stamp: string) => `archive ${stamp}`

const forgottenOf = (stamp: string, summary: boolean, historyLines: number): Forgotten => ({
  archive: archiveName(stamp),
  location: `${archiveName(stamp)} in the database`,
  files: [...(summary ? [PARTS.summary] : []), ...(historyLines > 0 ? [PARTS.history] : [])]
})

/**
 * The bytes history.jsonl would have (SqlHistoryRows.lineOfRow plus a
 * newline per line), counted by the server: a row kept as its line is that
 * line; an entry is `{"role":…,"content":…}`, whose JSON string escapes
 * PostgreSQL's to_json writes as JSON.stringify does.
 */
export const preview = (sql: SqlClient.SqlClient, agentId: string): Effect.Effect<ForgetPreview, SqlError> =>
  Effect.map(
    sql<{
      readonly lines: bigint
      readonly bytes: bigint
      readonly summary_bytes: number | null
      readonly summary: string | null
      readonly summary_json: string | null
      readonly unterminated: boolean | null
    }>`
      SELECT history.lines, history.bytes,
        coalesce(octet_length(agent.summary), 0) AS summary_bytes,
        CASE WHEN agent.summary_json IS NOT NULL THEN agent.summary END AS summary,
        agent.summary_json, agent.history_unterminated AS unterminated
      FROM (
        SELECT count(*) AS lines,
          coalesce(sum(coalesce(octet_length(line),
            20 + CASE WHEN role = 'assistant' THEN 11 ELSE 6 END + octet_length(to_json(coalesce(content, ''))::text)) + 1), 0) AS bytes
        FROM planckclaw_history WHERE agent_id = ${agentId}
      ) AS history
      LEFT JOIN planckclaw_agents AS agent ON agent.agent_id = ${agentId}`,
    (rows) => {
      const row = rows[0]
      const historyLines = Number(row?.lines ?? 0)
      // An imported history.jsonl whose last line had no newline.
      const historyBytes = Math.max(0, Number(row?.bytes ?? 0) - (historyLines > 0 && row?.unterminated === true ? 1 : 0))
      // A summary holding a NUL: its own bytes, not those of the U+FFFD its plain column has for each NUL.
      const summaryBytes = row === undefined ? 0 : exactBytes(row.summary_bytes, row.summary, row.summary_json)
      return { historyLines, historyBytes, summaryBytes, location: "an archive in the database" }
    }
  )

/** The first of `stamp`, `stamp-2`, `stamp-3`… not taken. */
const freeStamp = (stamp: string, taken: ReadonlySet<string>): string => {
  for (let attempt = 1; ; attempt++) {
    const name = attempt === 1 ? stamp : `${stamp}-${attempt}`
    if (!taken.has(name)) return name
  }
}

/**
 * Moves the agent's history and summary into a new archive; none when there
 * is nothing to forget (no history row, no summary or an empty one). Run
 * inside a transaction (`commit` is the whole of one).
 */
const move = (sql: SqlClient.SqlClient, agentId: string, stamp: string, request: string) =>
  Effect.gen(function*() {
    // The agent's row, locked: appends, compactions, imports and forgets of this agent take turns here.
    const agents = yield* sql<{ readonly summary: string | null; readonly summary_json: string | null; readonly history_unterminated: boolean }>`
      SELECT summary, summary_json, history_unterminated FROM planckclaw_agents WHERE agent_id = ${agentId} FOR UPDATE`
    const done = yield* sql<{ readonly stamp: string; readonly summarised: boolean; readonly history_lines: bigint }>`
      SELECT stamp, summary IS NOT NULL AS summarised, history_lines FROM planckclaw_archives
      WHERE agent_id = ${agentId} AND request = ${request}`
    if (done[0] !== undefined) {
      return Option.some(forgottenOf(done[0].stamp, done[0].summarised, Number(done[0].history_lines)))
    }
    const agent = agents[0]
    const summary = textOf(agent?.summary ?? null, agent?.summary_json)
    const rows = yield* sql<{ readonly any: boolean }>`SELECT EXISTS (SELECT 1 FROM planckclaw_history
      WHERE agent_id = ${agentId}) AS any`
    if (rows[0]?.any !== true && (summary === null || summary.length === 0)) return Option.none<Forgotten>()

    const taken = yield* sql<{ readonly stamp: string }>`SELECT stamp FROM planckclaw_archives
      WHERE agent_id = ${agentId} AND (stamp = ${stamp} OR starts_with(stamp, ${`${stamp}-`}))`
    const name = freeStamp(stamp, new Set(taken.map((row) => row.stamp)))
    yield* sql`INSERT INTO planckclaw_archives (agent_id, stamp, request, summary, summary_json, history_unterminated)
      VALUES (${agentId}, ${name}, ${request}, ${summary === null ? null : storable(summary)}, ${jsonOf(summary)}::text,
        ${agent?.history_unterminated ?? false})`
    // One statement deletes the rows and archives exactly those.
    const moved = yield* sql<{ readonly n: bigint }>`
      WITH moved AS (
        DELETE FROM planckclaw_history WHERE agent_id = ${agentId} RETURNING agent_id, seq, role, content, line, created),
      archived AS (
        INSERT INTO planckclaw_archived_history (agent_id, stamp, seq, role, content, line, created)
          SELECT agent_id, ${name}, seq, role, content, line, created FROM moved RETURNING 1)
      SELECT count(*) AS n FROM archived`
    const historyLines = Number(moved[0]?.n ?? 0)
    yield* sql`UPDATE planckclaw_archives SET history_lines = ${historyLines} WHERE agent_id = ${agentId} AND stamp = ${name}`
    yield* sql`UPDATE planckclaw_agents SET summary = NULL, summary_json = NULL, history_unterminated = false, epoch = epoch + 1
      WHERE agent_id = ${agentId}`
    return Option.some(forgottenOf(name, summary !== null, historyLines))
  })

/** The forget as one transaction; `request` names this forget, the same on every retry of it. */
export const commit = (
  sql: SqlClient.SqlClient,
  agentId: string,
  stamp: string,
  request: string
): Effect.Effect<Option.Option<Forgotten>, SqlError> => sql.withTransaction(move(sql, agentId, stamp, request))

/**
 * An archive as it was stored: its summary and its history rows in order
 * (for tests and a future restore); bigint columns as bigints, as the driver
 * reads them.
 */
export const readArchive = (sql: SqlClient.SqlClient, agentId: string, stamp: string) =>
  Effect.all({
    archive: Effect.map(
      sql<{
        readonly summary: string | null
        readonly summary_json: string | null
        readonly history_lines: bigint
        readonly history_unterminated: boolean
      }>`SELECT summary, summary_json, history_lines, history_unterminated FROM planckclaw_archives
        WHERE agent_id = ${agentId} AND stamp = ${stamp}`,
      (rows) =>
        rows.map(({ summary, summary_json, ...rest }) => ({ summary: textOf(summary, summary_json), ...rest }))
    ),
    rows: sql<{ readonly seq: bigint; readonly role: string | null; readonly content: string | null; readonly line: string | null }>`
      SELECT seq, role, content, line FROM planckclaw_archived_history
      WHERE agent_id = ${agentId} AND stamp = ${stamp} ORDER BY seq`
  })
