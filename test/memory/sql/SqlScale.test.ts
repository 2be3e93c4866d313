import type * as SqlClient from "effect/sql/SqlClient"
import type { Statement } from "effect/sql/Statement"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as SqlMemory from "../../../src/memory/sql/SqlMemory.js"
import { usePostgres } from "../../support/Postgres.js"
import { freshDatabase, migrated, withSql } from "./SqlKit.js"

const server = usePostgres()

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Actual Rows"?: number
  readonly Plans?: ReadonlyArray<PlanNode>
}

const nodes = (plan: PlanNode): Array<PlanNode> => [plan, ...(plan.Plans ?? []).flatMap(nodes)]

/** The executed plan of `statement` as the code runs it (same text, same parameters). */
const explain = (sql: SqlClient.SqlClient, statement: Statement<object>) => {
  const [text, params] = statement.compile()
  return Effect.map(
    sql.unsafe<{ "QUERY PLAN": ReadonlyArray<{ Plan: PlanNode }> }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params),
    (rows) => nodes(rows[0]!["QUERY PLAN"][0]!.Plan)
  )
}

describe("SQL memory at scale", () => {
  it.live("a turn's reads walk the index from the end of a 300,000-line history, never scanning the table", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase(yield* server)
      yield* withSql((sql) =>
        Effect.gen(function*() {
          // A long history for one agent among others, as generate_series makes it (no timing is asserted).
          yield* sql`INSERT INTO planckclaw_history (agent_id, seq, role, content)
            SELECT 'agent-' || (n % 3), n, CASE WHEN n % 2 = 0 THEN 'user' ELSE 'assistant' END, 'line ' || n
            FROM generate_series(1, 300000) AS n`
          yield* sql`INSERT INTO planckclaw_history (agent_id, seq, role, content) VALUES ('small', 1, 'user', 'hi')`
          yield* sql`ANALYZE planckclaw_history`
          for (const agent of ["agent-1", "small"]) {
            for (const statement of [SqlMemory.statements.tail(sql, agent, 40), SqlMemory.statements.moreThan(sql, agent, 200)]) {
              const plan = yield* explain(sql, statement)
              const onHistory = plan.filter((node) => node["Relation Name"] === "planckclaw_history")
              expect(onHistory.length).toBeGreaterThan(0)
              for (const node of onHistory) {
                expect(node["Node Type"]).toMatch(/^Index (Only )?Scan$/)
                expect(node["Index Name"]).toBe("planckclaw_history_pkey")
                // Rows read: the window asked for, not the history.
                expect(node["Actual Rows"] ?? 0).toBeLessThanOrEqual(201)
              }
            }
          }
          const memory = yield* SqlMemory.make("agent-1")
          const snapshot = yield* memory.snapshot(3)
          expect(snapshot.history.map((entry) => entry.content)).toEqual(["line 299992", "line 299995", "line 299998"])
          expect(yield* memory.hasMoreLinesThan(99_999)).toBe(true)
          expect(yield* memory.hasMoreLinesThan(100_000)).toBe(false)
        }).pipe(Effect.scoped)
      ).pipe(Effect.provide(migrated(url)))
    }), 120_000)
})
