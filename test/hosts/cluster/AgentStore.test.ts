/**
 * The cluster's listing of the agents in PostgreSQL (AgentStore.postgres),
 * against a throwaway server: a page at a time, in the byte order the file
 * host lists in, each agent's figures read in the page's one query.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import * as AgentStore from "../../../src/hosts/cluster/AgentStore.js"
import { CompactionLocks } from "../../../src/memory/sql/SqlCompactionLocks.js"
import { usePostgres } from "../../support/Postgres.js"
import { freshDatabase, migrated } from "../../memory/sql/SqlKit.js"

const server = usePostgres()

const store = Effect.gen(function*() {
  const url = yield* freshDatabase(yield* server)
  const context = yield* Layer.build(migrated(url))
  const sql = yield* Effect.provide(SqlClient.SqlClient, context)
  const compactionLocks = yield* Effect.provide(CompactionLocks, context)
  return {
    sql,
    agents: AgentStore.postgres({ where: "test", defaultSoulFile: "", provider: ConfigProvider.fromEnvRecord(Object.fromEntries(new Map()), { preserveEmptyStrings: true }), sql, compactionLocks })
  }
})

describe("AgentStore.postgres: the listing", () => {
  it.effect("pages through the agents byte by byte, each with its history lines, summary size and last message", () =>
    Effect.gen(function*() {
      const { agents, sql } = yield* store
      // As in a database that sorts text by a locale (ICU's root), which puts "a-2" and "a.1" after "a1".
      yield* sql`ALTER TABLE planckclaw_agents ALTER COLUMN agent_id TYPE text COLLATE "und-x-icu"`
      // Inserted out of order.
      const ids = ["b", "a-2", "a.1", "a1", "a_0", "c"]
      for (const [n, id] of ids.entries()) {
        yield* sql`INSERT INTO planckclaw_agents (agent_id, summary) VALUES (${id}, ${n === 0 ? null : "s".repeat(n)})`
        for (let seq = 1; seq <= n; seq++) {
          yield* sql`INSERT INTO planckclaw_history (agent_id, seq, role, content, created)
            VALUES (${id}, ${seq}, 'user', 'hi', ${new Date(Date.UTC(2026, 0, seq))})`
        }
      }
      const running = new Set(["a1"])
      const pages: Array<ReadonlyArray<string>> = []
      const nexts: Array<string | null> = []
      let after: string | undefined
      do {
        const page = yield* agents.page({ after, limit: 2 }, (id) => running.has(id))
        pages.push(page.agents.map((agent) => agent.id))
        nexts.push(page.next)
        after = page.next ?? undefined
      } while (after !== undefined)
      expect(pages).toEqual([["a-2", "a.1"], ["a1", "a_0"], ["b", "c"]])
      expect(nexts).toEqual(["a.1", "a_0", null])

      const all = yield* agents.page({ limit: 10 }, (id) => running.has(id))
      expect(all.next).toBeNull()
      expect(all.agents.find((agent) => agent.id === "a1")).toEqual({
        id: "a1",
        historyLines: 3,
        summaryBytes: 3,
        lastMessageAt: "2026-01-03T00:00:00.000Z",
        state: "running"
      })
      expect(all.agents.find((agent) => agent.id === "b")).toEqual({
        id: "b",
        historyLines: 0,
        summaryBytes: 0,
        lastMessageAt: null,
        state: "released"
      })
      // Each agent's figures as `status` reads them one at a time.
      for (const agent of all.agents) expect(yield* agents.status(agent.id as never, agent.state === "running")).toEqual(agent)
      expect(yield* agents.page({ after: "c", limit: 5 }, () => false)).toEqual({ agents: [], next: null })
    }))

  it.effect("keeps, with search, the agents whose id holds the text, as serve's listing does, a page at a time", () =>
    Effect.gen(function*() {
      const { agents, sql } = yield* store
      for (const id of ["bob", "alice", "bobby", "rob", "b_b", "bxb"]) yield* sql`INSERT INTO planckclaw_agents (agent_id) VALUES (${id})`
      const ids = (list: { readonly agents: ReadonlyArray<{ readonly id: string }> }) => list.agents.map((agent) => agent.id)
      const first = yield* agents.page({ limit: 2, search: "ob" }, () => false)
      expect([ids(first), first.next]).toEqual([["bob", "bobby"], "bobby"])
      const second = yield* agents.page({ after: "bobby", limit: 2, search: "ob" }, () => false)
      expect([ids(second), second.next]).toEqual([["rob"], null])
      // The text as it is, not a pattern: _ is itself.
      expect(ids(yield* agents.page({ limit: 10, search: "_" }, () => false))).toEqual(["b_b"])
      expect(ids(yield* agents.page({ limit: 10, search: "" }, () => false))).toHaveLength(6)
      // A NUL, which PostgreSQL text refuses, is in no id: it finds none, and an `after` holding one is the id before it.
      expect(yield* agents.page({ limit: 10, search: "b\u0000" }, () => false)).toEqual({ agents: [], next: null })
      expect(ids(yield* agents.page({ after: "bob\u0000x", limit: 10, search: "ob" }, () => false))).toEqual(["bobby", "rob"])
    }))
})
