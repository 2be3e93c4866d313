/**
 * `planckclaw memory export|import` beside a live agent of the cluster:
 * whatever commits meanwhile (a compaction, an exchange), the export is one
 * state of the memory and the import never removes what was acknowledged.
 * Each interleaving is made certain by a lock held by the test, and seen
 * taking effect in pg_stat_activity.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Result } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlMemory from "../../../src/memory/sql/SqlMemory.js"
import * as SqlTransfer from "../../../src/memory/sql/SqlTransfer.js"
import { usePostgres } from "../../support/Postgres.js"
import { tempDir } from "../../support/Sandbox.js"
import { freshDatabase, migrated } from "./SqlKit.js"

const server = usePostgres()

const inDatabase = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const url = yield* freshDatabase(yield* server)
    return yield* effect.pipe(Effect.provide(migrated(url)))
  })

const line = (n: number) => `{"role":"${n % 2 === 1 ? "user" : "assistant"}","content":"line ${n}"}`

/** Until another session of this database waits for a lock (our own fiber, blocked where the test holds one). */
const untilOneWaitsForALock = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ readonly waiting: number }>`SELECT count(*)::int AS waiting FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`.pipe(
    Effect.map((rows) => (rows[0]?.waiting ?? 0) > 0),
    Effect.repeat({ until: (waiting) => waiting }),
    Effect.asVoid
  ))

/**
 * Runs `beside` while `hold` keeps its locks: `hold` runs in a transaction
 * of its own, then waits until `beside` is blocked by it, then runs `then` and commits.
 */
const whileHeld = <A, E>(
  hold: Effect.Effect<unknown, unknown, SqlClient.SqlClient>,
  beside: Effect.Effect<A, E, SqlClient.SqlClient>,
  then: Effect.Effect<unknown, unknown, SqlClient.SqlClient>
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const held = yield* Deferred.make<void>()
    const goOn = yield* Deferred.make<void>()
    const holder = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
      yield* hold
      yield* Deferred.succeed(held, undefined)
      yield* Deferred.await(goOn)
      yield* then
    })))
    yield* Deferred.await(held)
    const besideFiber = yield* Effect.forkChild(Effect.result(beside))
    yield* untilOneWaitsForALock
    yield* Deferred.succeed(goOn, undefined)
    yield* Fiber.join(holder)
    return yield* Fiber.join(besideFiber)
  })

describe("memory export and import beside a live agent", () => {
  it.live("an export while a compaction commits is the memory before it or after it, never the old summary without the folded lines", () =>
    inDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const root = yield* tempDir()
      const source = path.join(root, "source")
      fs.mkdirSync(source)
      const all = Array.from({ length: 10 }, (_, index) => line(index + 1))
      fs.writeFileSync(path.join(source, "history.jsonl"), all.map((text) => `${text}\n`).join(""))
      fs.writeFileSync(path.join(source, "summary.md"), "before\n")
      yield* SqlTransfer.importAgent("ada", source)

      const out = path.join(root, "out")
      // The export reads the agent's row, then waits for history, which the compaction holds; it commits meanwhile.
      const exported = yield* whileHeld(
        sql`LOCK TABLE planckclaw_history IN ACCESS EXCLUSIVE MODE`,
        SqlTransfer.exportAgent("ada", out),
        Effect.andThen(
          sql`DELETE FROM planckclaw_history WHERE agent_id = 'ada' AND seq <= 6`,
          sql`UPDATE planckclaw_agents SET summary = 'after: lines 1 to 6' WHERE agent_id = 'ada'`
        )
      )
      expect(exported._tag).toBe("Success")
      const summary = fs.readFileSync(path.join(out, "summary.md"), "utf8")
      const history = fs.readFileSync(path.join(out, "history.jsonl"), "utf8").split("\n").filter((text) => text !== "")
      expect({ summary, history }).toEqual(
        summary === "before\n" ? { summary, history: all } : { summary: "after: lines 1 to 6", history: all.slice(6) }
      )
    })))

  it.live("an import without --replace while the agent's first exchange commits is refused, and the exchange is kept", () =>
    inDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const root = yield* tempDir()
      const source = path.join(root, "source")
      fs.mkdirSync(source)
      fs.writeFileSync(path.join(source, "history.jsonl"), `${line(1)}\n`)
      // The agent's first exchange, as SqlMemory appends it, commits once the import waits on it.
      const imported = yield* whileHeld(
        Effect.flatMap(SqlMemory.allocate(sql, "bo", 2), (first) =>
          sql`INSERT INTO planckclaw_history ${sql.insert([
            { agent_id: "bo", seq: first, role: "user", content: "acknowledged", line: null },
            { agent_id: "bo", seq: first + 1, role: "assistant", content: "stored", line: null }
          ])}`),
        SqlTransfer.importAgent("bo", source),
        Effect.void
      )
      expect(imported._tag).toBe("Failure")
      expect(String(Result.isFailure(imported) ? imported.failure.message : "")).toContain("agent bo already has memory in the database")
      const rows = yield* sql<{ readonly content: string }>`SELECT content FROM planckclaw_history WHERE agent_id = 'bo' ORDER BY seq`
      expect(rows.map((row) => row.content)).toEqual(["acknowledged", "stored"])
    })))
})
