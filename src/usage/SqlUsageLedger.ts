/**
 * The usage ledger in PostgreSQL: one row per brain answer (the columns of
 * a usage.jsonl line), written by a Brain decorator, as UsageLedger.ts does
 * for files. Writing it never fails a turn: a failure is logged once.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Arr from "effect/Array"
import * as Clock from "effect/Clock"
import type * as ConfigError from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schedule from "effect/Schedule"
import { Brain, type BrainService, tapAnswers } from "../ports/Brain.js"
import { BrainLabelConfig } from "../config/BrainChoice.js"
import { lineOf, type UsageLine } from "./UsageLedger.js"
import { holdsNul, storable } from "../memory/sql/SqlExactText.js"
import { defaultRetry, resilient } from "../memory/sql/SqlResilience.js"

/**
 * The line as its row holds it: a brain or model name holding a NUL (only a
 * broken backend sends one) with U+FFFD in its place, which a text column
 * can hold, rather than the row lost. They are names to sum and price by,
 * not texts to give back, so they are not kept twice as a summary or a
 * reply is (SqlExactText.ts); usage.jsonl keeps them as they came.
 */
export const storableLine = (line: UsageLine): UsageLine =>
  holdsNul(line.brain) || holdsNul(line.model) ? { ...line, brain: storable(line.brain), model: storable(line.model) } : line

export const insert = (sql: SqlClient.SqlClient, agentId: string, lines: ReadonlyArray<UsageLine>) => {
  const rows = lines.map((line) => ({ agent_id: agentId, ...storableLine(line) }))
  return Arr.isArrayNonEmpty(rows) ? Effect.asVoid(sql`INSERT INTO planckclaw_usage ${sql.insert(rows)}`) : Effect.void
}

/** Every row of the agent's ledger, oldest first, as usage.jsonl lines. */
export const read = (sql: SqlClient.SqlClient, agentId: string) =>
  sql<{
    readonly at: string
    readonly kind: "turn" | "compaction"
    readonly brain: string
    readonly model: string
    readonly ms: number
    readonly input: string
    readonly output: string
    readonly cache_write: string
    readonly cache_read: string
  }>`SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, kind, brain, model, ms,
      input, output, cache_write, cache_read
    FROM planckclaw_usage WHERE agent_id = ${agentId} ORDER BY id`.pipe(
    Effect.map((rows) =>
      rows.map((row): UsageLine => ({
        at: row.at,
        kind: row.kind,
        brain: row.brain,
        model: row.model,
        ms: row.ms,
        input: Number(row.input),
        output: Number(row.output),
        cache_write: Number(row.cache_write),
        cache_read: Number(row.cache_read)
      }))
    )
  )

/** `brain` with every answer recorded for `agentId`; a failed write is logged once and never fails the call. */
export const recording = (
  brain: BrainService,
  agentId: string,
  label: string,
  retry: Schedule.Schedule<unknown> = defaultRetry
): Effect.Effect<BrainService, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let warned = false
    // Whole answers and streamed ones alike (tapAnswers).
    return tapAnswers(brain, (request, started, response) =>
      Effect.flatMap(Clock.currentTimeMillis, (ended) =>
        insert(sql, agentId, [lineOf(request, response, label, started, ended)]).pipe(
          resilient(`recording usage of agent ${agentId}`, retry),
          Effect.catch((error) => {
            if (warned) return Effect.void
            warned = true
            return Effect.logWarning(`usage ledger not written (${error.message}); turns go on without it`)
          })
        )))
  })

/** The Brain recording into the database: provide it the bridge's Brain and a SqlClient. */
export const layer = (
  agentId: string,
  retry?: Schedule.Schedule<unknown>
): Layer.Layer<Brain, ConfigError.ConfigError, Brain | SqlClient.SqlClient> =>
  Layer.effect(
    Brain,
    Effect.gen(function*() {
      const label = yield* BrainLabelConfig
      return yield* recording(yield* Brain, agentId, label, retry)
    })
  )
