/**
 * What the cluster tests read back: every agent's history as the database
 * holds it, and how often the runners' brain answered each text.
 */
import * as fs from "node:fs"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, Redacted } from "effect"

export interface Line {
  readonly role: string
  readonly content: string
}

/** Every agent's history rows, in order. */
export const histories = async (url: string): Promise<Map<string, Array<Line>>> => {
  const rows = await Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ agent_id: string; role: string; content: string }>`SELECT agent_id, role, content FROM planckclaw_history
      ORDER BY agent_id, seq`
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) }))))
  const byAgent = new Map<string, Array<Line>>()
  for (const row of rows) {
    const lines = byAgent.get(row.agent_id) ?? []
    lines.push({ role: row.role, content: row.content })
    byAgent.set(row.agent_id, lines)
  }
  return byAgent
}

/** The runners' brain calls (RUNNER_CALLS), counted by the text answered. */
export const brainCalls = (file: string): Map<string, number> => {
  const counts = new Map<string, number>()
  const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
  for (const line of text.split("\n")) {
    if (line === "") continue
    const said = JSON.parse(line) as string
    counts.set(said, (counts.get(said) ?? 0) + 1)
  }
  return counts
}
