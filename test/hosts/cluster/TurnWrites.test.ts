/**
 * A cluster agent's turn writes its decided reply, its usage and its
 * exchange in one statement (TurnWrites), over a throwaway PostgreSQL: the
 * Agent entity on effect/cluster's TestRunner, with the real AgentStore and
 * TurnJournal. The database logs every statement of the test's database
 * (log_statement), so the test counts what a turn sends.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as TestRunner from "effect/cluster/TestRunner"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Schedule } from "effect"
import { Brain } from "../../../src/ports/Brain.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import * as AgentEntity from "../../../src/hosts/cluster/AgentEntity.js"
import * as AgentStore from "../../../src/hosts/cluster/AgentStore.js"
import * as TurnJournal from "../../../src/hosts/cluster/TurnJournal.js"
import * as TurnWrites from "../../../src/hosts/cluster/TurnWrites.js"
import * as SqlCompactionLocks from "../../../src/memory/sql/SqlCompactionLocks.js"
import { usePostgres } from "../../support/Postgres.js"
import { freshDatabase, migrated } from "../../memory/sql/SqlKit.js"

const server = usePostgres()

const provider = ConfigProvider.fromEnvRecord({ HISTORY_MAX: "5", HISTORY_KEEP: "2" }, { preserveEmptyStrings: true })

const brain = Layer.succeed(Brain, {
  complete: (request) =>
    Effect.sync(() => {
      if (request.system !== undefined && JSON.stringify(request.system).includes("summar")) {
        return { content: [{ type: "text" as const, text: "the summary" }], stop_reason: "end_turn" as const, usage: { input_tokens: 1, output_tokens: 1 } }
      }
      const last = request.messages[request.messages.length - 1]!
      const text = typeof last.content === "string" ? last.content : ""
      return { content: [{ type: "text" as const, text: `reply to ${text}` }], stop_reason: "end_turn" as const, usage: { input_tokens: 7, output_tokens: 3 } }
    })
})

/** The test's database, logging its statements, with the entity over it. */
const setup = Effect.gen(function*() {
  const pg = yield* server
  const url = yield* freshDatabase(pg)
  const name = new URL(url).pathname.slice(1)
  const context = yield* Layer.build(migrated(url))
  const sql = yield* Effect.provide(SqlClient.SqlClient, context)
  yield* sql.unsafe(`ALTER DATABASE "${name}" SET log_statement = 'all'`)
  // The pool's connections were opened before: a fresh client logs.
  const logged = yield* Layer.build(migrated(url))
  const client = yield* Effect.provide(SqlClient.SqlClient, logged)
  const store = Layer.effect(
    AgentStore.AgentStore,
    Effect.map(SqlCompactionLocks.make, (compactionLocks) =>
      AgentStore.postgres({ where: "test", defaultSoulFile: "", provider, sql: client, compactionLocks }))
  )
  const parts = Layer.mergeAll(brain, InMemoryClaws.layer([]), store, TurnJournal.layer).pipe(
    Layer.provideMerge(Layer.succeed(SqlClient.SqlClient, client)),
    Layer.provideMerge(Layer.succeed(ConfigProvider.ConfigProvider, provider))
  )
  const entity = yield* Layer.build(AgentEntity.layer.pipe(Layer.provideMerge(TestRunner.layer), Layer.provide(parts)))
  /** The statements the database ran for `effect`, each with the parameters it was given. */
  const statementsOf = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.gen(function*() {
      const before = (yield* pg.log).length
      const result = yield* effect
      // A statement's lines after its first are the entry's own: each entry starts with its time.
      const entries = (yield* pg.log).slice(before).split(/\n(?=\d{4}-\d\d-\d\d )/)
      const statements = entries.filter((entry) => /LOG: {2}(statement|execute [^:]*): /.test(entry))
      return { result, statements }
    })
  const send = (id: string, text: string) =>
    Effect.flatMap(AgentEntity.Agent.client, (entityClient) => entityClient(id).Send({ text, channel: "http", key: AgentEntity.messageKey(undefined) })).pipe(
      Effect.provide(entity)
    )
  return { sql, send, statementsOf }
})

describe("TurnWrites: a cluster turn's writes", () => {
  it.live("go in one statement: the decided reply, the usage and the exchange; the compaction's question is answered by it", () =>
    Effect.gen(function*() {
      const { send, sql, statementsOf } = yield* setup
      yield* send("alice", "first")
      // A started agent's turn.
      const { result, statements } = yield* statementsOf(send("alice", "second"))
      expect(result.reply).toBe("reply to second")
      const writes = statements.filter((line) => /planckclaw_/.test(line) && /(INSERT|UPDATE|DELETE|BEGIN)/i.test(line))
      expect(writes).toHaveLength(1)
      expect(statements.filter((line) => /BEGIN/.test(line))).toEqual([])
      // The compaction's "more than HISTORY_MAX lines?" came with the write, not as a statement of its own.
      expect(statements.filter((line) => /(statement|execute [^:]*): SELECT EXISTS/.test(line))).toEqual([])

      const history = yield* sql<{ role: string; content: string }>`SELECT role, content FROM planckclaw_history WHERE agent_id = 'alice' ORDER BY seq`
      expect(history.map((row) => `${row.role}: ${row.content}`)).toEqual([
        "user: first", "assistant: reply to first", "user: second", "assistant: reply to second"
      ])
      const turns = yield* sql<{ reply: string; stored: boolean }>`SELECT reply, stored FROM planckclaw_cluster_turns WHERE agent_id = 'alice' ORDER BY decided_at, reply`
      expect(turns.map((row) => [row.reply, row.stored])).toEqual([["reply to first", true], ["reply to second", true]])
      const usage = yield* sql<{ kind: string; input: string }>`SELECT kind, input FROM planckclaw_usage WHERE agent_id = 'alice' ORDER BY id`
      expect(usage.map((row) => [row.kind, Number(row.input)])).toEqual([["turn", 7], ["turn", 7]])
    }))

  it.effect("run again after its answer was lost, it changes nothing: no second exchange, reply or usage row", () =>
    Effect.gen(function*() {
      const { sql } = yield* setup
      yield* sql`INSERT INTO planckclaw_agents (agent_id) VALUES ('bob')`
      const entries = [{ role: "user" as const, content: "hi" }, { role: "assistant" as const, content: "hello" }] as const
      const usage = [{ at: "2026-01-01T00:00:00.000Z", kind: "turn" as const, brain: "test", model: "m", ms: 1, input: 2, output: 3, cache_write: 0, cache_read: 0 }]
      const first = yield* TurnWrites.appendTurn(sql, "bob", entries, "msg:1", { reply: "hello", stored: true }, usage, 3)
      const again = yield* TurnWrites.appendTurn(sql, "bob", entries, "msg:1", { reply: "hello", stored: true }, usage, 3)
      expect(first[0]).toEqual({ stored: true, more: false })
      expect(again[0]).toEqual({ stored: false, more: false })
      const counts = yield* sql<{ history: string; turns: string; usage: string }>`SELECT
        (SELECT count(*) FROM planckclaw_history WHERE agent_id = 'bob') AS history,
        (SELECT count(*) FROM planckclaw_cluster_turns WHERE agent_id = 'bob') AS turns,
        (SELECT count(*) FROM planckclaw_usage WHERE agent_id = 'bob') AS usage`
      expect(counts.map((row) => [Number(row.history), Number(row.turns), Number(row.usage)])).toEqual([[2, 1, 1]])
      // Two more lines make four: more than 3 once they are in.
      const next = yield* TurnWrites.appendTurn(sql, "bob", entries, "msg:2", undefined, [], 3)
      expect(next[0]).toEqual({ stored: true, more: true })
    }))

  it.live("a compaction still starts when history passes HISTORY_MAX, told by the turn's statement", () =>
    Effect.gen(function*() {
      const { send, sql } = yield* setup
      for (const text of ["one", "two", "three", "four"]) yield* send("carol", text)
      // 8 lines against HISTORY_MAX 5: folded down to HISTORY_KEEP (2) lines and a summary, in the background.
      const folded = yield* sql<{ summary: string | null; lines: string }>`SELECT summary,
        (SELECT count(*) FROM planckclaw_history WHERE agent_id = 'carol') AS lines FROM planckclaw_agents WHERE agent_id = 'carol'`.pipe(
        // The compaction runs in the background of the last reply: read until its commit shows.
        Effect.repeat({ until: (rows) => (rows[0]?.summary ?? "").length > 0, schedule: Schedule.spaced("20 millis") })
      )
      expect(folded[0]?.summary).toContain("the summary")
      expect(Number(folded[0]?.lines)).toBeLessThanOrEqual(5)
    }))
})
