/**
 * /forget on memory in PostgreSQL, as Forget.test.ts is for files: the
 * history rows and summary move into an archive in one transaction, the
 * next snapshot is empty, a failure inside the commit leaves the old memory,
 * and a second forget within the same second gets its own archive.
 */
import type * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, Option, Schedule, type Scope } from "effect"
import { renderForgetPreview } from "../../../src/agent/SlashCommands.js"
import { DEFAULT_SOUL, encodeLine } from "../../../src/memory/Memory.js"
import * as SqlCompactionLocks from "../../../src/memory/sql/SqlCompactionLocks.js"
import * as SqlFoldStore from "../../../src/memory/sql/SqlFoldStore.js"
import * as SqlForget from "../../../src/memory/sql/SqlForget.js"
import * as SqlMemory from "../../../src/memory/sql/SqlMemory.js"
import { usePostgres } from "../../support/Postgres.js"
import { freshDatabase, migrated, withSql } from "./SqlKit.js"

const server = usePostgres()

const STAMP = "2026-11-30T19-00-00Z"
const SUMMARY = "The user is Marc.\n"
const OLD = [
  { role: "user" as const, content: "héllo \"quoted\" \\ \t\u0001 👋" },
  { role: "assistant" as const, content: "with a NUL \u0000 inside" },
  { role: "user" as const, content: "u2" },
  { role: "assistant" as const, content: "a2" }
]

const inFreshDatabase = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | SqlCompactionLocks.CompactionLocks | Scope.Scope>) =>
  Effect.gen(function*() {
    const url = yield* freshDatabase(yield* server)
    return yield* Effect.scoped(effect).pipe(Effect.provide(migrated(url)))
  })

/** Alice's memory holding OLD and SUMMARY. */
const alice = Effect.gen(function*() {
  const memory = yield* SqlMemory.make("alice", { retry: Schedule.recurs(1) })
  yield* memory.append(OLD.slice(0, 2), { exchange: "k-old" })
  yield* memory.append(OLD.slice(2))
  yield* withSql((sql) => sql`UPDATE planckclaw_agents SET summary = ${SUMMARY} WHERE agent_id = 'alice'`)
  return memory
})

const historyRows = withSql((sql) =>
  sql<{ seq: string; role: string | null; content: string | null; line: string | null }>`
    SELECT seq, role, content, line FROM planckclaw_history WHERE agent_id = 'alice' ORDER BY seq`
)
const summaryOf = withSql((sql) =>
  Effect.map(sql<{ summary: string | null }>`SELECT summary FROM planckclaw_agents WHERE agent_id = 'alice'`, (rows) => rows[0]?.summary)
)
const archives = withSql((sql) => sql<{ stamp: string }>`SELECT stamp FROM planckclaw_archives ORDER BY stamp`)

describe("SQL memory: forget", () => {
  it.live("moves history rows and summary into an archive; the next snapshot is empty; a second one in the same second gets its own", () =>
    inFreshDatabase(Effect.gen(function*() {
      const memory = yield* alice
      const before = yield* historyRows
      const historyText = OLD.map((entry) => `${encodeLine(entry)}\n`).join("")
      expect(yield* memory.forgetPreview).toEqual({
        historyLines: 4,
        historyBytes: Buffer.byteLength(historyText, "utf8"),
        summaryBytes: SUMMARY.length,
        location: "an archive in the database"
      })
      expect(renderForgetPreview(yield* memory.forgetPreview)).toContain("into an archive in the database, and I start afresh")

      const done = yield* memory.forget(STAMP)
      expect(done).toEqual(Option.some({
        archive: `archive ${STAMP}`,
        location: `archive ${STAMP} in the database`,
        files: ["summary", "history"]
      }))
      expect(yield* memory.snapshot(10)).toEqual({ soul: DEFAULT_SOUL, summary: "", history: [] })
      expect(yield* historyRows).toEqual([])
      expect(yield* summaryOf).toBeNull()
      expect(yield* memory.hasMoreLinesThan(0)).toBe(false)
      expect(yield* memory.forgetPreview).toEqual({ historyLines: 0, historyBytes: 0, summaryBytes: 0, location: "an archive in the database" })
      const archived = yield* withSql((sql) => SqlForget.readArchive(sql, "alice", STAMP))
      expect(archived.archive).toEqual([{ summary: SUMMARY, history_lines: 4n, history_unterminated: false }])
      expect(archived.rows).toEqual(before)

      // The exchange already stored (now in the archive) is not stored again by a replay.
      yield* memory.append(OLD.slice(0, 2), { exchange: "k-old" })
      expect((yield* memory.snapshot(10)).history).toEqual([])

      yield* memory.append([{ role: "user", content: "new" }, { role: "assistant", content: "start" }])
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["new", "start"])
      expect(yield* memory.forget(STAMP)).toEqual(Option.some({
        archive: `archive ${STAMP}-2`,
        location: `archive ${STAMP}-2 in the database`,
        files: ["history"]
      }))
      expect(yield* memory.forget(STAMP)).toEqual(Option.none())
      expect((yield* archives).map((row) => row.stamp)).toEqual([STAMP, `${STAMP}-2`])
      // The first archive is as it was.
      expect((yield* withSql((sql) => SqlForget.readArchive(sql, "alice", STAMP))).rows).toEqual(before)
    })))

  it.live("nothing to forget: none, and no archive; another agent's memory is its own", () =>
    inFreshDatabase(Effect.gen(function*() {
      yield* alice
      const bob = yield* SqlMemory.make("bob")
      expect(yield* bob.forget(STAMP)).toEqual(Option.none())
      yield* withSql((sql) => sql`UPDATE planckclaw_agents SET summary = '' WHERE agent_id = 'bob'`)
      expect(yield* bob.forget(STAMP)).toEqual(Option.none())
      expect(yield* archives).toEqual([])
      expect((yield* historyRows).length).toBe(4)
    })))

  it.live("a statement failing inside the commit leaves the old history and summary intact, and no archive", () =>
    inFreshDatabase(Effect.gen(function*() {
      const memory = yield* alice
      const before = yield* historyRows
      // The agent's UPDATE fails after the rows were moved in the same transaction.
      yield* withSql((sql) =>
        Effect.andThen(
          sql`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'disk on fire'; END $$`,
          sql`CREATE TRIGGER refuse BEFORE UPDATE OF summary ON planckclaw_agents FOR EACH ROW EXECUTE FUNCTION refuse()`
        )
      )
      const outcome = yield* Effect.result(memory.forget(STAMP))
      expect(outcome._tag).toBe("Failure")
      expect(JSON.stringify(outcome)).toContain("disk on fire")
      expect(yield* historyRows).toEqual(before)
      expect(yield* summaryOf).toBe(SUMMARY)
      expect(yield* archives).toEqual([])
      expect(yield* withSql((sql) => sql`SELECT 1 FROM planckclaw_archived_history`)).toEqual([])
      expect((yield* memory.snapshot(10)).history).toEqual(OLD)
    })))

  it.live("a forget run again under its own key (a lost COMMIT answer) finds its archive and archives nothing more", () =>
    inFreshDatabase(Effect.gen(function*() {
      const memory = yield* alice
      const first = yield* withSql((sql) => SqlForget.commit(sql, "alice", STAMP, "request-1"))
      yield* memory.append([{ role: "user", content: "after" }, { role: "assistant", content: "it" }])
      const again = yield* withSql((sql) => SqlForget.commit(sql, "alice", STAMP, "request-1"))
      expect(again).toEqual(first)
      expect(Option.map(first, (done) => done.archive)).toEqual(Option.some(`archive ${STAMP}`))
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["after", "it"])
    })))

  it.live("a compaction planned before the forget cannot commit the old conversation's summary", () =>
    inFreshDatabase(Effect.gen(function*() {
      const memory = yield* alice
      const folds = yield* SqlFoldStore.make("alice", { retry: Schedule.recurs(1) })
      // Under its lease, as the Compactor commits: what refuses it is the forget, not a missing lease.
      const outcome = yield* Effect.result(folds.exclusiveCompaction(Effect.gen(function*() {
        const plan = yield* folds.planFold(2)
        expect(Option.isSome(plan)).toBe(true)
        yield* memory.forget(STAMP)
        yield* memory.append([{ role: "user", content: "fresh" }, { role: "assistant", content: "start" }])
        return yield* folds.commitFold(Option.getOrThrow(plan), "Old summary.")
      })))
      expect(Result.isFailure(outcome) && outcome.failure._tag === "MemoryError" && outcome.failure.reason).toBe("replaced")
      expect(yield* summaryOf).toBeNull()
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["fresh", "start"])
    })))

  it.live("counts the bytes history.jsonl would have: lines kept as they were, and a last line without its newline", () =>
    inFreshDatabase(Effect.gen(function*() {
      const memory = yield* alice
      const odd = "  {\"role\": \"user\", \"content\": \"spaced\"}"
      yield* withSql((sql) =>
        Effect.andThen(
          sql`INSERT INTO planckclaw_history (agent_id, seq, line) VALUES ('alice', 1000, ${odd})`,
          sql`UPDATE planckclaw_agents SET history_unterminated = true WHERE agent_id = 'alice'`
        )
      )
      const text = [...OLD.map(encodeLine), odd].join("\n")
      const preview = yield* memory.forgetPreview
      expect([preview.historyLines, preview.historyBytes]).toEqual([5, Buffer.byteLength(text, "utf8")])
      yield* memory.forget(STAMP)
      const archived = yield* withSql((sql) => SqlForget.readArchive(sql, "alice", STAMP))
      expect(archived.archive[0]?.history_unterminated).toBe(true)
      expect(archived.rows.at(-1)?.line).toBe(odd)
    })))
})
