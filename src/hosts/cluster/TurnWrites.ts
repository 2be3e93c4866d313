/**
 * What a cluster agent's turn writes, in one statement. Taken apart, a turn
 * stored its usage (one INSERT per brain answer), its decided reply (the
 * TurnJournal's INSERT), its exchange (a transaction: BEGIN, the exchange's
 * key, the agent's next sequence number, the history rows, COMMIT) and then
 * asked whether history had grown past the compaction threshold: nine round
 * trips the entity waited on. Here the reply and the usage wait (in this
 * object) for the exchange, and all go in one statement of data-modifying
 * CTEs, which also answers the compaction question.
 *
 * One statement is one transaction: the decided reply is never stored
 * without its exchange or the reverse, and a statement run again (its
 * answer lost) finds the exchange's key taken and changes nothing, its usage
 * rows included. A turn whose exchange is not stored (a command, a failure,
 * a refused message) or could not be (the database away past the retries)
 * has its reply and usage written on their own before its reply leaves
 * (TurnJournal.clusterInbox), as before. A compaction's usage is written at
 * once: no turn carries it.
 */
import * as Arr from "effect/Array"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Schedule from "effect/Schedule"
import type * as SqlClient from "effect/sql/SqlClient"
import type { AppendOptions } from "../../memory/HistoryAppender.js"
import type { HistoryEntry, MemoryService } from "../../memory/Memory.js"
import { rowOfEntry } from "../../memory/sql/SqlHistoryRows.js"
import type { MemoryError } from "../../memory/MemoryDir.js"
import { defaultRetry, resilient } from "../../memory/sql/SqlResilience.js"
import { type BrainService, tapAnswers } from "../../ports/Brain.js"
import * as SqlUsageLedger from "../../usage/SqlUsageLedger.js"
import { lineOf, type UsageLine } from "../../usage/UsageLedger.js"
import { type Decided, insertTurn } from "./DecidedRows.js"

/** What waits for the turn's exchange, per agent (its turns run one at a time). */
export interface TurnWrites {
  /** Decided replies waiting for their exchange, by message key. */
  readonly decided: Map<string, Decided>
  /** Usage of the turn's brain answers, oldest first. */
  usage: Array<UsageLine>
}

export const make = (): TurnWrites => ({ decided: new Map(), usage: [] })

/**
 * The sizes every agent of a runner's store asks with (they share the
 * host's settings): the lines a turn's snapshot reads (TurnReads) and the
 * compaction's threshold (HISTORY_MAX), learnt from the first agent that
 * asks, so a new agent's first turn reads and writes as a started one's.
 */
export interface Sizes {
  keep: number | undefined
  limit: number | undefined
}

export const sizes = (): Sizes => ({ keep: undefined, limit: undefined })

/** The usage waiting, taken (so it is written once). */
export const takeUsage = (writes: TurnWrites): ReadonlyArray<UsageLine> => {
  const taken = writes.usage
  writes.usage = []
  return taken
}

/** Where the statement leaves the answer to "more than `limit` lines?", for the compaction that asks next. */
interface Check {
  readonly limit: number
  readonly more: boolean
}

/**
 * The exchange under `key` with, when given, its decided reply and usage,
 * as one statement; `more` answers whether history then holds more than
 * `limit` lines (the statement sees history as it was before its own rows:
 * more than limit - n before).
 */
export const appendTurn = (
  sql: SqlClient.SqlClient,
  agentId: string,
  entries: Arr.NonEmptyReadonlyArray<HistoryEntry>,
  key: string,
  decided: Decided | undefined,
  usage: ReadonlyArray<UsageLine>,
  limit: number | undefined
) => {
  const n = entries.length
  const rows = sql.join(", ", false)(entries.map((entry, index) => {
    const row = rowOfEntry(entry)
    return sql`(${index}::int, ${row.role}::text, ${row.content}::text, ${row.line}::text)`
  }))
  const turn = decided === undefined ? sql`` : sql`turn AS (
      ${insertTurn(sql, agentId, key, decided)}
    ),`
  // Only with the exchange: a statement run again after its answer was lost counts nothing twice.
  const used = usage.length > 0
    ? sql`used AS (
      INSERT INTO planckclaw_usage (agent_id, at, kind, brain, model, ms, input, output, cache_write, cache_read)
      SELECT ${agentId}, v.at::timestamptz, v.kind, v.brain, v.model, v.ms::float8, v.input::bigint, v.output::bigint,
        v.cache_write::bigint, v.cache_read::bigint
      FROM (VALUES ${
      sql.join(", ", false)(usage.map(SqlUsageLedger.storableLine).map((line) =>
        sql`(${line.at}, ${line.kind}::text, ${line.brain}::text, ${line.model}::text, ${line.ms}, ${line.input}, ${line.output}, ${line.cache_write}, ${line.cache_read})`
      ))
    }) AS v(at, kind, brain, model, ms, input, output, cache_write, cache_read)
      WHERE EXISTS (SELECT 1 FROM claimed)
    ),`
    : sql``
  const more = limit === undefined || limit < n ? sql`NULL::boolean` : sql`EXISTS (SELECT 1 FROM planckclaw_history
      WHERE agent_id = ${agentId} ORDER BY seq DESC OFFSET (${limit}::bigint - (SELECT count(*) FROM claimed) * ${n}::bigint) LIMIT 1)`
  return sql<{ readonly stored: boolean; readonly more: boolean | null }>`WITH ${turn}
    claimed AS (
      INSERT INTO planckclaw_exchanges (agent_id, key) VALUES (${agentId}, ${key})
      ON CONFLICT (agent_id, key) DO NOTHING RETURNING key
    ),
    ${used}
    first AS (
      INSERT INTO planckclaw_agents (agent_id, next_seq) SELECT ${agentId}, ${1 + n}::bigint FROM claimed
      ON CONFLICT (agent_id) DO UPDATE
        SET next_seq = planckclaw_agents.next_seq + ${n}::bigint, history_unterminated = false
      RETURNING next_seq - ${n}::bigint AS seq
    ),
    added AS (
      INSERT INTO planckclaw_history (agent_id, seq, role, content, line)
      SELECT ${agentId}, first.seq + v.i, v.role, v.content, v.line FROM first, (VALUES ${rows}) AS v(i, role, content, line)
    )
    SELECT EXISTS (SELECT 1 FROM claimed) AS stored, ${more} AS more`
}

/**
 * The agent's Memory with its exchanges stored by appendTurn (with what
 * waits for them in `writes`), and the compaction's next question answered
 * from that statement. Everything else is `memory`'s (SqlMemory).
 */
export const memory = (
  base: MemoryService,
  sql: SqlClient.SqlClient,
  agentId: string,
  writes: TurnWrites,
  // The compaction asks with one limit (HISTORY_MAX): learnt from its first question.
  learnt: Sizes,
  retry: Schedule.Schedule<unknown> = defaultRetry
): MemoryService => {
  let answered: Check | undefined

  const append = (entries: ReadonlyArray<HistoryEntry>, options?: AppendOptions) => {
    const key = options?.exchange
    if (key === undefined || !Arr.isReadonlyArrayNonEmpty(entries)) return base.append(entries, options)
    return Effect.suspend(() => {
      const decided = writes.decided.get(key)
      const usage = takeUsage(writes)
      return appendTurn(sql, agentId, entries, key, decided, usage, learnt.limit).pipe(
        resilient(`appending to the history of agent ${agentId}`, retry),
        Effect.tap(([row]) =>
          Effect.sync(() => {
            writes.decided.delete(key)
            const asked = learnt.limit
            answered = asked !== undefined && row?.more !== null && row?.more !== undefined ? { limit: asked, more: row.more } : undefined
          })
        ),
        Effect.tap(base.memoryDir.storeWorked),
        Effect.asVoid,
        Effect.catch((error) =>
          Effect.suspend(() => {
            // Not written: the usage waits for the reply's own write (TurnJournal.clusterInbox).
            writes.usage = [...usage, ...writes.usage]
            return base.memoryDir.storeFailed(error)
          })
        )
      )
    })
  }

  // The answer the last append left is taken once: a compaction asks again under its lock, and that goes to the database.
  const hasMoreLinesThan = (asked: number) =>
    Effect.suspend(() => {
      learnt.limit = asked
      const known = answered
      answered = undefined
      return known !== undefined && known.limit === asked ? Effect.succeed(known.more) : base.hasMoreLinesThan(asked)
    })

  return { ...base, append, hasMoreLinesThan }
}

/**
 * `brain` with each answer's usage recorded: a turn's waits in `writes` for
 * its exchange (or its reply's own write); a compaction's is written at
 * once. A failed write is logged once and never fails the call.
 */
export const recordingBrain = (
  brain: BrainService,
  sql: SqlClient.SqlClient,
  agentId: string,
  label: string,
  writes: TurnWrites,
  retry: Schedule.Schedule<unknown> = defaultRetry
): BrainService => {
  let warned = false
  return tapAnswers(brain, (request, started, response) =>
    Effect.flatMap(Clock.currentTimeMillis, (ended) => {
      const line = lineOf(request, response, label, started, ended)
      if (line.kind === "turn") return Effect.sync(() => void writes.usage.push(line))
      return SqlUsageLedger.insert(sql, agentId, [line]).pipe(
        resilient(`recording usage of agent ${agentId}`, retry),
        Effect.catch((error) => {
          if (warned) return Effect.void
          warned = true
          return Effect.logWarning(`usage ledger not written (${error.message}); turns go on without it`)
        })
      )
    }))
}

/** What waits in `writes` for message `key` (its decided reply, the turn's usage), written now on its own. */
export const flush = (
  sql: SqlClient.SqlClient,
  agentId: string,
  writes: TurnWrites,
  key: string | undefined,
  record: (key: string, decided: Decided) => Effect.Effect<void, MemoryError>,
  retry: Schedule.Schedule<unknown> = defaultRetry
) =>
  Effect.suspend(() => {
    const decided = key === undefined ? undefined : writes.decided.get(key)
    const usage = takeUsage(writes)
    const reply = key === undefined || decided === undefined
      ? Effect.void
      : Effect.tap(record(key, decided), () => Effect.sync(() => void writes.decided.delete(key)))
    const used = usage.length === 0 ? Effect.void : SqlUsageLedger.insert(sql, agentId, usage).pipe(
      resilient(`recording usage of agent ${agentId}`, retry),
      Effect.catch((error) => Effect.logWarning(`usage ledger not written (${error.message}); turns go on without it`))
    )
    return Effect.andThen(used, reply)
  })
