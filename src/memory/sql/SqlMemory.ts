/**
 * The agent's memory in PostgreSQL: the same Memory service as the files
 * (Memory.ts), over the tables of SqlMigrations.ts. History is rows by
 * (agent_id, seq); a tail read walks the primary key's index backwards
 * (`ORDER BY seq DESC LIMIT n`), so it costs the same for 10 lines or 10
 * million. An append is one transaction: all its lines or none, and so is
 * a forget (SqlForget.ts). Every operation waits for a database that went
 * away (SqlResilience.ts).
 *
 * The Memory port carries the files' directory (`directory`, `memoryDir`)
 * for the file-side layers (FoldStore.layer, UsageLedger.layer). Memory in
 * PostgreSQL brings its own (SqlFoldStore.ts, SqlUsageLedger.ts, assembled
 * by SqlAgentMemory.ts); its `memoryDir` is a guard whose every file
 * operation fails, under a path no file can ever be made in (below
 * /dev/null), so a file-side layer wired to it by mistake writes nothing.
 */
import * as crypto from "node:crypto"
import * as SqlClient from "effect/sql/SqlClient"
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import type * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import type { AppendOptions } from "../HistoryAppender.js"
import type { HistoryEntry } from "../HistoryFile.js"
import * as Layout from "../Layout.js"
import type { MemoryService } from "../Memory.js"
import { MemoryError } from "../MemoryDir.js"
import type * as MemoryDir from "../MemoryDir.js"
import * as FallbackSoul from "../FallbackSoul.js"
import * as SqlForget from "./SqlForget.js"
import { textOf } from "./SqlExactText.js"
import { entryOfRow, type HistoryRow, rowOfEntry } from "./SqlHistoryRows.js"
import { defaultRetry, resilient } from "./SqlResilience.js"

export interface SqlMemoryOptions {
  /** The persona when the agent has none in the database (a host's default soul file), before DEFAULT_SOUL. */
  readonly fallbackSoulFile?: string | undefined
  /** That file's reader shared by a host's agents (FallbackSoul.reader), so its text is kept once. */
  readonly fallbackSoul?: FallbackSoul.Reader | undefined
  /** How operations wait for a database that went away (SqlResilience.defaultRetry). */
  readonly retry?: Schedule.Schedule<unknown> | undefined
}

/** Where the guard says memory is; never a directory (see the module comment). */
export const locationOf = (agentId: string) => `/dev/null/planckclaw-postgresql/${encodeURIComponent(agentId)}`

/** A MemoryDir that refuses every file operation: memory of this agent is in the database. */
const guardDir = (agentId: string, storageFailing: Effect.Effect<boolean>, failing: (value: boolean) => void) =>
  Effect.map(Semaphore.make(1), (compactionMutex): MemoryDir.MemoryDir => {
    const refuse = (what: string) =>
      new MemoryError({
        reason: "unwritable",
        message: `${what}: the memory of agent ${agentId} is in PostgreSQL, not in a directory`
      })
    return {
      directory: locationOf(agentId),
      paths: Layout.files(locationOf(agentId)),
      locked: (what) => Effect.fail(refuse(what)),
      lockedRead: (what) => Effect.fail(refuse(what)),
      lockedAsync: (what) => Effect.fail(refuse(what)),
      compactionMutex,
      storageFailing,
      storeFailed: (error) => Effect.sync(() => failing(true)).pipe(Effect.andThen(Effect.fail(error))),
      storeWorked: Effect.sync(() => failing(false))
    }
  })

/** Creates the agent's row if it has none yet. */
export const ensureAgent = (sql: SqlClient.SqlClient, agentId: string) =>
  sql`INSERT INTO planckclaw_agents (agent_id) VALUES (${agentId}) ON CONFLICT (agent_id) DO NOTHING`

/**
 * Allocates `count` sequence numbers for the agent's history, locking its
 * row until the transaction ends (appends, compactions and imports of one
 * agent take turns there); returns the first.
 */
export const allocate = (sql: SqlClient.SqlClient, agentId: string, count: number) =>
  Effect.map(
    sql<{ readonly first: string }>`INSERT INTO planckclaw_agents (agent_id, next_seq) VALUES (${agentId}, ${1 + count})
      ON CONFLICT (agent_id) DO UPDATE
        SET next_seq = planckclaw_agents.next_seq + ${count}, history_unterminated = false
      RETURNING next_seq - ${count} AS first`,
    (rows) => Number(rows[0]?.first ?? 1)
  )

/**
 * The statements a turn runs on history, both walking the primary key's
 * index back from the end (a test checks their plans on a large table).
 */
export const statements = {
  /** The last `count` rows, newest first. */
  tail: (sql: SqlClient.SqlClient, agentId: string, count: number) =>
    sql<HistoryRow>`SELECT role, content, line FROM planckclaw_history
      WHERE agent_id = ${agentId} ORDER BY seq DESC LIMIT ${count}`,
  /** Whether history holds more than `limit` rows: at most limit + 1 index entries read. */
  moreThan: (sql: SqlClient.SqlClient, agentId: string, limit: number) =>
    sql<{ readonly more: boolean }>`SELECT EXISTS (SELECT 1 FROM planckclaw_history WHERE agent_id = ${agentId}
      ORDER BY seq DESC OFFSET ${Math.max(0, limit)} LIMIT 1) AS more`
}

/** The last `count` rows of the agent's history, oldest first. */
export const tail = (sql: SqlClient.SqlClient, agentId: string, count: number) =>
  count <= 0
    ? Effect.succeed<ReadonlyArray<HistoryRow>>([])
    : Effect.map(statements.tail(sql, agentId, count), (rows) => rows.slice().reverse())

export const make = (
  agentId: string,
  options: SqlMemoryOptions = {}
): Effect.Effect<MemoryService, MemoryError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const retry = options.retry ?? defaultRetry
    // The persona when the agent has none in the database (FallbackSoul).
    const fallbackSoul = options.fallbackSoul ?? FallbackSoul.reader(options.fallbackSoulFile)
    let failing = false
    const storageFailing = Effect.sync(() => failing)
    const memoryDir = yield* guardDir(agentId, storageFailing, (value) => {
      failing = value
    })
    yield* ensureAgent(sql, agentId).pipe(resilient(`opening the memory of agent ${agentId}`, retry))

    // Lines that are not entries are reported once per agent, not once per turn.
    let reportedSkipped = false
    const reportSkipped = (count: number) =>
      Effect.suspend(() => {
        if (count === 0 || reportedSkipped) return Effect.void
        reportedSkipped = true
        return Effect.logWarning(`history of agent ${agentId}: skipped ${count} line(s) that are not {"role","content"}`)
      })

    const snapshot = (keep: number) =>
      Effect.all([
        sql<{ readonly summary: string | null; readonly summary_json: string | null; readonly soul: string | null }>`
          SELECT summary, summary_json, soul FROM planckclaw_agents WHERE agent_id = ${agentId}`,
        tail(sql, agentId, keep)
      ], { concurrency: 2 }).pipe(
        resilient(`reading the memory of agent ${agentId}`, retry),
        Effect.flatMap(([agents, rows]) => {
          const history = rows.flatMap((row) => Option.toArray(entryOfRow(row)))
          const soul = FallbackSoul.ownOr(agents[0]?.soul, fallbackSoul)
          if (Result.isFailure(soul)) return Effect.fail(soul.failure)
          return Effect.as(reportSkipped(rows.length - history.length), {
            soul: soul.success,
            summary: (textOf(agents[0]?.summary ?? null, agents[0]?.summary_json) ?? "").trim(),
            history
          })
        })
      )

    const sameAs = (rows: ReadonlyArray<HistoryRow>, entries: ReadonlyArray<HistoryEntry>) =>
      rows.length === entries.length && rows.every((row, index) => {
        const entry = entryOfRow(row)
        return Option.isSome(entry) && entry.value.role === entries[index]?.role &&
          entry.value.content === entries[index]?.content
      })

    const write = (entries: ReadonlyArray<HistoryEntry>, appendOptions: AppendOptions | undefined) =>
      sql.withTransaction(Effect.gen(function*() {
        const key = appendOptions?.exchange
        if (key !== undefined) {
          // The exchange's key is the proof it is stored: a replay finds it and writes nothing.
          const claimed = yield* sql`INSERT INTO planckclaw_exchanges (agent_id, key) VALUES (${agentId}, ${key})
            ON CONFLICT (agent_id, key) DO NOTHING RETURNING key`
          if (claimed.length === 0) return
        }
        const first = yield* allocate(sql, agentId, entries.length)
        if (key === undefined && appendOptions?.unlessLast === true) {
          if (sameAs(yield* tail(sql, agentId, entries.length), entries)) return
        }
        const rows = entries.map((entry, index) => ({ agent_id: agentId, seq: first + index, ...rowOfEntry(entry) }))
        if (Arr.isArrayNonEmpty(rows)) yield* sql`INSERT INTO planckclaw_history ${sql.insert(rows)}`
      }))

    const append = (entries: ReadonlyArray<HistoryEntry>, appendOptions?: AppendOptions) =>
      entries.length === 0 ? Effect.void : write(entries, appendOptions).pipe(
        resilient(`appending to the history of agent ${agentId}`, retry),
        Effect.tap(memoryDir.storeWorked),
        Effect.tapError(() => Effect.sync(() => {
          failing = true
        }))
      )

    // Walks at most limit + 1 index entries from the end, whatever the history's length.
    const hasMoreLinesThan = (limit: number) =>
      statements.moreThan(sql, agentId, limit).pipe(
        resilient(`counting the history of agent ${agentId}`, retry),
        Effect.map((rows) => rows[0]?.more === true)
      )

    // The key is made once per forget, so a retry after a lost COMMIT answer finds the archive it made.
    const forget = (stamp: string) =>
      Effect.suspend(() => {
        const request = crypto.randomUUID()
        return SqlForget.commit(sql, agentId, stamp, request).pipe(resilient(`forgetting the memory of agent ${agentId}`, retry))
      }).pipe(Effect.tap(memoryDir.storeWorked))

    return {
      directory: memoryDir.directory,
      memoryDir,
      snapshot,
      append,
      storageFailing,
      hasMoreLinesThan,
      forgetPreview: SqlForget.preview(sql, agentId).pipe(resilient(`counting what forget would archive for agent ${agentId}`, retry)),
      forget,
      // Connections belong to the pool, not to the agent: nothing to close.
      closeFiles: Effect.void
    } satisfies MemoryService
  })
