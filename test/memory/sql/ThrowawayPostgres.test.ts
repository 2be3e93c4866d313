import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "effect/sql"
import { Effect, Result, Exit, Redacted, Schedule, Scope } from "effect"
import { startPostgres } from "../../support/Postgres.js"

describe("throwaway PostgreSQL", () => {
  it.live("starts on loopback, answers a query over TCP with the password, and is removed with its scope", () =>
    Effect.gen(function*() {
      const seen = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startPostgres({ database: "probe" })
        expect(server.url).toMatch(/^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/probe$/)
        const rows = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return yield* sql<{ answer: number; db: string }>`SELECT 41 + 1 AS answer, current_database() AS db`
        }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(server.url) })))
        expect(rows).toEqual([{ answer: 42, db: "probe" }])
        const other = yield* server.createDatabase("second")
        expect(other).toContain("/second")
        expect(fs.existsSync(path.join(server.directory, "data", "postmaster.pid"))).toBe(true)
        return server.directory
      }))
      expect(fs.existsSync(seen)).toBe(false)
    }), 120_000)

  it.live("stops and starts again on the same port with its data", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* startPostgres()
      const query = Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM kept`
      })
      const client = PgClient.layer({ url: Redacted.make(server.url) })
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE kept (n int)`
        yield* sql`INSERT INTO kept VALUES (1), (2)`
      }).pipe(Effect.provide(client))
      yield* server.stop
      const down = yield* Effect.result(query.pipe(Effect.provide(client)))
      expect(down._tag).toBe("Failure")
      yield* server.start
      expect(yield* query.pipe(Effect.provide(client))).toEqual([{ n: 2 }])
    })), 120_000)

  it.live("the server of a test process that died without cleaning up is stopped and removed by the next start", () =>
    Effect.gen(function*() {
      // Started in a scope nobody closes, as in a test process killed mid-run.
      const abandoned = yield* Scope.make()
      const orphan = yield* Scope.provide(startPostgres(), abandoned)
      const deadPid = spawnSync("true").pid
      fs.writeFileSync(path.join(orphan.directory, "owner.pid"), String(deadPid))
      const pid = Number(fs.readFileSync(path.join(orphan.directory, "data", "postmaster.pid"), "utf8").split("\n")[0])
      yield* Effect.scoped(startPostgres())
      expect(fs.existsSync(orphan.directory)).toBe(false)
      // pg_ctl returns once the pid file is gone, a moment before the process exits; a zombie (whose parent,
      // after pg_ctl exited, may be an init that does not reap) has stopped too.
      const gone = Effect.sync(() => {
        const state = Result.try(() => fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0])
        return Result.isFailure(state) || state.success === "Z"
      })
      const stopped = yield* gone.pipe(
        Effect.filterOrFail((dead) => dead, () => `postmaster ${pid} still running`),
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 100 }),
        Effect.result
      )
      expect(stopped).toEqual(Result.succeed(true))
      yield* Scope.close(abandoned, Exit.void)
    }), 120_000)
})
