/**
 * What the cluster's host reads of its agents' records in PostgreSQL,
 * without starting them, answered as `serve` answers from its files
 * (AgentRecords): a page of an agent's history, newest first, read by its
 * rows' order (agent_id, seq) a page at a time, never whole; its usage
 * ledger, and every agent's, summed per day and model by the database and
 * priced by UsageReport as `serve` prices its ledgers; its soul and summary.
 *
 * A history page's `at` and `next` are the rows' sequence numbers, where
 * `serve` gives byte offsets of history.jsonl: either is only ever given
 * back as `before`. A compaction deletes the oldest rows and keeps the
 * others' numbers, so a cursor taken before it still means the same entries.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type * as FallbackSoul from "../../memory/FallbackSoul.js"
import { entryOfRow, type HistoryRow } from "../../memory/sql/SqlHistoryRows.js"
import { textOf } from "../../memory/sql/SqlExactText.js"
import { describe } from "../../memory/sql/SqlResilience.js"
import type { PriceTable } from "../../usage/Prices.js"
import * as UsageReport from "../../usage/UsageReport.js"
import * as AgentId from "../serve/AgentId.js"
import * as AgentRecords from "../serve/AgentRecords.js"
import { HostError } from "../serve/HostError.js"

export interface ClusterRecords {
  /** A page of agent `id`'s history, newest first, before row `before` (all rows when absent). */
  readonly history: (
    id: AgentId.AgentId,
    page: { readonly before?: number | undefined; readonly limit: number }
  ) => Effect.Effect<AgentRecords.HistoryPage, HostError>
  readonly usage: (id: AgentId.AgentId, period: AgentRecords.Period) => Effect.Effect<UsageReport.Report, HostError>
  readonly usageAll: (period: AgentRecords.Period) => Effect.Effect<AgentRecords.AllUsage, HostError>
  readonly memory: (id: AgentId.AgentId) => Effect.Effect<AgentRecords.MemoryText, HostError>
}

/** A statement that failed: the database's own words, never its URL (SqlResilience.describe). */
const databaseError = (what: string, id?: string) => (error: SqlError) =>
  new HostError({ reason: "unavailable", ...(id === undefined ? {} : { id }), message: `${what}: the database did not answer: ${describe(error)}` })

interface GroupRow {
  readonly day: string
  readonly model: string
  readonly requests: string | number
  readonly input: string | number
  readonly output: string | number
  readonly cache_write: string | number
  readonly cache_read: string | number
}

const groupOf = (row: GroupRow): UsageReport.Group => ({
  day: row.day,
  model: row.model,
  requests: Number(row.requests),
  input: Number(row.input),
  output: Number(row.output),
  cache_write: Number(row.cache_write),
  cache_read: Number(row.cache_read)
})

export const make = (options: {
  readonly sql: SqlClient.SqlClient
  readonly prices: PriceTable
  /** The host's soul, for an agent without one of its own (the store's one reader). */
  readonly hostSoul: FallbackSoul.Reader
}): ClusterRecords => {
  const { sql } = options

  /** Up to `count` rows before `before`, newest first: one query, one page's rows at most. */
  const rowsBefore = (id: string, before: number | undefined, count: number) =>
    sql<HistoryRow & { readonly seq: string | number }>`SELECT seq, role, content, line FROM planckclaw_history
      WHERE agent_id = ${id} ${before === undefined ? sql`` : sql`AND seq < ${before}`}
      ORDER BY seq DESC LIMIT ${count}`

  /**
   * As BackwardLines.pageBackward reads the file: rows that are not entries
   * are passed over; `next` is the oldest entry's row once the page is full
   * and older rows remain, else null (the page reached the first row).
   */
  const history: ClusterRecords["history"] = (id, page) =>
    Effect.gen(function*() {
      const entries: Array<AgentRecords.HistoryEntryAt> = []
      let cursor = page.before
      for (;;) {
        // One row past the page's need tells whether older rows remain.
        const wanted = page.limit - entries.length + 1
        const rows = yield* rowsBefore(id, cursor, wanted)
        for (const row of rows) {
          if (entries.length === page.limit) return { entries, next: entries[entries.length - 1]!.at }
          cursor = Number(row.seq)
          const entry = entryOfRow(row)
          if (Option.isSome(entry)) entries.push({ at: cursor, role: entry.value.role, content: entry.value.content })
        }
        if (rows.length < wanted) return { entries, next: null }
      }
    }).pipe(Effect.mapError(databaseError(`agent ${id}`, id)))

  /** The ledger's rows of `period`, summed per day (UTC) and model: by agent when `id` is absent, of agents that exist. */
  const grouped = (id: string | undefined, period: AgentRecords.Period) =>
    sql<GroupRow & { readonly agent_id: string }>`SELECT agent_id, day, model, count(*) AS requests, sum(input) AS input,
        sum(output) AS output, sum(cache_write) AS cache_write, sum(cache_read) AS cache_read
      FROM (SELECT u.agent_id, to_char(u.at AT TIME ZONE 'UTC', 'YYYY-MM-DD') COLLATE "C" AS day, u.model,
          u.input, u.output, u.cache_write, u.cache_read
        FROM planckclaw_usage u
        WHERE ${id === undefined ? sql`EXISTS (SELECT 1 FROM planckclaw_agents a WHERE a.agent_id = u.agent_id)` : sql`u.agent_id = ${id}`}) AS ledger
      WHERE true ${period.since === undefined ? sql`` : sql`AND day >= ${period.since}`}
        ${period.until === undefined ? sql`` : sql`AND day <= ${period.until}`}
      GROUP BY agent_id, day, model
      ORDER BY agent_id COLLATE "C"`

  const usage: ClusterRecords["usage"] = (id, period) =>
    grouped(id, period).pipe(
      Effect.map((rows) => UsageReport.reportOfGroups(rows.map(groupOf), 0, options.prices, period.since)),
      Effect.mapError(databaseError(`agent ${id}`, id))
    )

  // Per agent, in id order byte by byte (as `serve` sorts its directories), each agent's groups priced as `usage` prices them.
  const usageAll: ClusterRecords["usageAll"] = (period) =>
    grouped(undefined, period).pipe(
      Effect.map((rows) => {
        const byAgent = new Map<string, Array<UsageReport.Group>>()
        for (const row of rows) {
          if (!AgentId.is(row.agent_id)) continue
          const groups = byAgent.get(row.agent_id) ?? []
          groups.push(groupOf(row))
          byAgent.set(row.agent_id, groups)
        }
        const days = [...byAgent].flatMap(([agent, groups]) =>
          UsageReport.perDay(agent, UsageReport.reportOfGroups(groups, 0, options.prices, period.since))
        )
        return AgentRecords.allUsageOf(period, days)
      }),
      Effect.mapError(databaseError("reading the usage ledgers"))
    )

  const memory: ClusterRecords["memory"] = (id) =>
    sql<{ readonly soul: string | null; readonly summary: string | null; readonly summary_json: string | null }>`SELECT soul,
        summary, summary_json FROM planckclaw_agents WHERE agent_id = ${id}`.pipe(
      Effect.mapError(databaseError(`agent ${id}`, id)),
      Effect.flatMap(([row]) => {
        // The summary exactly, a NUL included (SqlExactText), as summary.md gives it.
        const summary = row === undefined ? undefined : textOf(row.summary, row.summary_json)
        return Result.match(AgentRecords.memoryTextOf(row?.soul, summary, options.hostSoul), {
          onFailure: (message) => Effect.fail(new HostError({ reason: "unavailable", id, message: `agent ${id}: ${message}` })),
          onSuccess: Effect.succeed
        })
      })
    )

  return { history, usage, usageAll, memory }
}
