/**
 * What a cluster agent's turn reads, in one statement. Taken apart, a turn
 * asked the TurnJournal for its message's decided reply, then read the
 * agent's row (summary, soul) and the tail of its history: three
 * statements. Here the journal's question also brings the snapshot the turn
 * is about to take (once a first turn has told how many lines a turn
 * reads), kept for that one snapshot: read a moment earlier, in the same
 * statement as the journal, it is the memory as it was then, as any read is.
 * A snapshot of another size (a compaction's), or a second one, is read
 * from the database as before (SqlMemory).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as Schedule from "effect/Schedule"
import type * as SqlClient from "effect/sql/SqlClient"
import * as FallbackSoul from "../../memory/FallbackSoul.js"
import type { MemoryService, MemorySnapshot } from "../../memory/Memory.js"
import { entryOfRow, type HistoryRow } from "../../memory/sql/SqlHistoryRows.js"
import { textOf } from "../../memory/sql/SqlExactText.js"
import { defaultRetry, resilient } from "../../memory/sql/SqlResilience.js"
import { type Decided, decidedOf } from "./DecidedRows.js"
import type { Sizes } from "./TurnWrites.js"

interface Row {
  readonly decided_reply: string | null
  readonly decided_reply_json: string | null
  readonly decided_request: string | null
  readonly decided_stored: boolean | null
  readonly summary: string | null
  /** The summary's JSON when it holds a NUL (SqlExactText). */
  readonly summary_json: string | null
  readonly soul: string | null
  /** The history tail, newest first, as JSON [role, content, line] triples; null when not asked or empty. */
  readonly tail: string | null
}

/** The decided reply of message `key` and, with `keep`, the agent's row and last `keep` history rows. */
export const statement = (sql: SqlClient.SqlClient, agentId: string, key: string, keep: number | undefined) => {
  const tail = keep === undefined || keep <= 0 ? sql`NULL::text` : sql`(SELECT json_agg(json_build_array(h.role, h.content, h.line))::text
      FROM (SELECT role, content, line FROM planckclaw_history WHERE agent_id = ${agentId} ORDER BY seq DESC LIMIT ${keep}) h)`
  return sql<Row>`SELECT t.reply AS decided_reply, t.reply_json AS decided_reply_json,
      t.request AS decided_request, t.stored AS decided_stored, a.summary, a.summary_json, a.soul, ${tail} AS tail
    FROM (SELECT 1) AS one
    LEFT JOIN planckclaw_cluster_turns t ON t.agent_id = ${agentId} AND t.message_key = ${key}
    LEFT JOIN planckclaw_agents a ON a.agent_id = ${agentId}`
}

export interface TurnReads {
  /** The message's decided reply (the TurnJournal's lookup), bringing the turn's snapshot with it. */
  readonly lookup: (key: string) => Effect.Effect<Option.Option<Decided>, import("../../memory/MemoryDir.js").MemoryError>
  /** `memory` whose next snapshot of the turn's size is the one the lookup brought. */
  readonly memory: (memory: MemoryService) => MemoryService
}

export const make = (
  sql: SqlClient.SqlClient,
  agentId: string,
  // How many lines a turn's snapshot reads: learnt from the first one of the store's agents.
  learnt: Sizes,
  options: { readonly fallbackSoul?: FallbackSoul.Reader | undefined; readonly retry?: Schedule.Schedule<unknown> | undefined } = {}
): TurnReads => {
  const fallbackSoul = options.fallbackSoul ?? FallbackSoul.reader(undefined)
  let brought: { readonly keep: number; readonly snapshot: MemorySnapshot } | undefined

  const lookup = (key: string) =>
    Effect.suspend(() => {
      brought = undefined
      const asked = learnt.keep
      return statement(sql, agentId, key, asked).pipe(
        resilient(`reading the decided reply of a message to agent ${agentId}`, options.retry ?? defaultRetry),
        Effect.map(([row]) => {
          if (row !== undefined && asked !== undefined) {
            const rows = row.tail === null ? [] : (JSON.parse(row.tail) as Array<[string | null, string | null, string | null]>)
            const history = rows.reverse().flatMap(([role, content, line]) => Option.toArray(entryOfRow({ role, content, line } satisfies HistoryRow)))
            // As SqlMemory reads it: the agent's soul, else the host's, which may refuse (over its limit).
            const soul = FallbackSoul.ownOr(row.soul, fallbackSoul)
            // Lines that are not entries, or a host's soul refused: left to SqlMemory's own read, which reports them.
            if (history.length === rows.length && Result.isSuccess(soul)) {
              brought = {
                keep: asked,
                // As SqlMemory reads it: exactly, a NUL included.
                snapshot: { soul: soul.success, summary: (textOf(row.summary, row.summary_json) ?? "").trim(), history }
              }
            }
          }
          return row === undefined || row.decided_reply === null
            ? Option.none()
            : Option.some(decidedOf({
              reply: row.decided_reply,
              reply_json: row.decided_reply_json,
              request: row.decided_request,
              stored: row.decided_stored === true
            }))
        })
      )
    })

  const memory = (base: MemoryService): MemoryService => ({
    ...base,
    snapshot: (asked) =>
      Effect.suspend(() => {
        const taken = brought
        if (taken !== undefined && taken.keep === asked) {
          brought = undefined
          return Effect.succeed(taken.snapshot)
        }
        // The first turn's size is the one to bring; a compaction's (0) is not.
        if (learnt.keep === undefined && asked > 0) learnt.keep = asked
        return base.snapshot(asked)
      })
  })

  return { lookup, memory }
}
