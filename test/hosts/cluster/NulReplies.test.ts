/**
 * A reply holding a NUL character (a model echoing one from a tool's
 * output; inbound text is cleaned of control characters, replies are not),
 * in a cluster over a throwaway PostgreSQL, whose TEXT columns refuse NUL:
 * the turn's one statement stores it (the decided reply in
 * planckclaw_cluster_turns, the exchange in history), every reader gets it
 * back exactly (the journal's lookup, the turn's read, the engine's stored
 * reply for a retry of its key), and the agent's next exchanges are stored
 * as before. A model name with a NUL does not fail the turn either. A table
 * made by an earlier version gets the new columns, and its rows read as
 * they were written.
 */
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { BrainService } from "../../../src/ports/Brain.js"
import * as TurnJournal from "../../../src/hosts/cluster/TurnJournal.js"
import * as TurnReads from "../../../src/hosts/cluster/TurnReads.js"
import * as TurnWrites from "../../../src/hosts/cluster/TurnWrites.js"
import { entryOfRow, type HistoryRow } from "../../../src/memory/sql/SqlHistoryRows.js"
import { usePostgres } from "../../support/Postgres.js"
import { freshDatabase, migrated } from "../../memory/sql/SqlKit.js"
import { entity, send } from "./EntityOverPostgres.js"

const server = usePostgres()

const NUL = "\u0000"

/** Echoes the message; with a NUL at the end when it asks for one, and a model name holding one when it asks for that. */
const echo = (asked: Array<string>): BrainService => ({
  complete: (request) =>
    Effect.sync(() => {
      const last = request.messages[request.messages.length - 1]!
      const text = typeof last.content === "string" ? last.content : JSON.stringify(last.content)
      asked.push(text)
      return {
        content: [{ type: "text" as const, text: `you said: ${text}${text.includes("nul") ? NUL : ""}` }],
        stop_reason: "end_turn" as const,
        usage: { input_tokens: 7, output_tokens: 3 },
        ...(text.includes("model") ? { model: `broken${NUL}model` } : {})
      }
    })
})

const historyOf = (sql: SqlClient.SqlClient, agent: string) =>
  Effect.map(
    sql<HistoryRow>`SELECT role, content, line FROM planckclaw_history WHERE agent_id = ${agent} ORDER BY seq`,
    (rows) => rows.flatMap((row) => Option.toArray(entryOfRow(row))).map((entry) => `${entry.role}: ${entry.content}`)
  )

const onFreshDatabase = <A, E>(test: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.flatMap(Effect.flatMap(server, freshDatabase), (url) => Effect.provide(test, migrated(url)))

describe("a reply holding a NUL in a cluster", () => {
  it.live("is stored with its exchange and read back exactly; the agent's next exchanges are stored too", () =>
    onFreshDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const asked: Array<string> = []
      const replied = `you said: give me a nul${NUL}`
      yield* Effect.gen(function*() {
        expect(yield* send("alice", "give me a nul", "k1")).toMatchObject({ reply: replied, stored: true })
        // Its key again: the reply the engine stored, exactly, without a turn.
        expect(yield* send("alice", "give me a nul", "k1")).toMatchObject({ reply: replied, stored: true })
        expect(yield* send("alice", "plain", "k2")).toMatchObject({ reply: "you said: plain", stored: true })
      }).pipe(Effect.provide(entity(sql, echo(asked), { messages: "postgres" })))
      expect(asked).toEqual(["give me a nul", "plain"])
      expect(yield* historyOf(sql, "alice")).toEqual([
        "user: give me a nul", `assistant: ${replied}`, "user: plain", "assistant: you said: plain"
      ])
      // What a redelivery of its message would find: the journal's lookup and the turn's read.
      const journal = yield* TurnJournal.make
      expect(Option.map(yield* journal.lookup("alice", "idem:k1"), (decided) => decided.reply)).toEqual(Option.some(replied))
      const reads = TurnReads.make(sql, "alice", TurnWrites.sizes())
      expect(Option.map(yield* reads.lookup("idem:k1"), (decided) => decided.reply)).toEqual(Option.some(replied))
      // An earlier version's runner reads `reply` alone: the same text, the NUL shown as U+FFFD.
      const row = yield* sql<{ reply: string }>`SELECT reply FROM planckclaw_cluster_turns WHERE message_key = 'idem:k1'`
      expect(row[0]?.reply).toBe("you said: give me a nul\uFFFD")
    })), 60_000)

  it.live("from a model whose name holds one, the turn is stored, its usage with U+FFFD in the name", () =>
    onFreshDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const outcome = yield* send("bob", "which model?", "k1").pipe(Effect.provide(entity(sql, echo([]))))
      expect(outcome).toMatchObject({ reply: "you said: which model?", stored: true })
      expect(yield* historyOf(sql, "bob")).toEqual(["user: which model?", "assistant: you said: which model?"])
      const usage = yield* sql<{ model: string }>`SELECT model FROM planckclaw_usage WHERE agent_id = 'bob'`
      expect(usage.map((line) => line.model)).toEqual(["broken\uFFFDmodel"])
    })), 60_000)

  it.effect("a table an earlier version made gets the new columns; its rows read as they were written", () =>
    onFreshDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // The table as the first version of the journal made it, with a row.
      yield* Migrator.make({})({
        loader: Migrator.fromRecord({
          "1_turns": sql`CREATE TABLE planckclaw_cluster_turns (agent_id TEXT NOT NULL, message_key TEXT NOT NULL,
            reply TEXT NOT NULL, stored BOOLEAN NOT NULL, decided_at TIMESTAMPTZ NOT NULL DEFAULT NOW(), PRIMARY KEY (agent_id, message_key))`
        }),
        table: "planckclaw_cluster_migrations"
      })
      yield* sql`INSERT INTO planckclaw_cluster_turns (agent_id, message_key, reply, stored) VALUES ('cid', 'idem:old', 'an old reply', TRUE)`
      const journal = yield* TurnJournal.make
      expect(yield* journal.lookup("cid", "idem:old")).toEqual(Option.some({ reply: "an old reply", stored: true }))
      yield* journal.record("cid", "idem:new", { reply: `a${NUL}b`, stored: false, request: "r" })
      expect(yield* journal.lookup("cid", "idem:new")).toEqual(Option.some({ reply: `a${NUL}b`, stored: false, request: "r" }))
    })), 60_000)
})
