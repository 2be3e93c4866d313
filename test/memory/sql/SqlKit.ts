/**
 * A fresh, migrated database per test on the file's throwaway server, and
 * the SqlClient on it.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { Clock, Effect, Layer, Redacted } from "effect"
import * as SqlCompactionLocks from "../../../src/memory/sql/SqlCompactionLocks.js"
import * as SqlMigrations from "../../../src/memory/sql/SqlMigrations.js"
import type { PostgresServer } from "../../support/Postgres.js"

let databases = 0

/** A new database on `server`, migrated; its URL. */
export const freshDatabase = (server: PostgresServer) =>
  Effect.suspend(() => server.createDatabase(`t${process.pid}_${++databases}`))

/**
 * The client on `url`, on the real clock even in a test under TestClock: the
 * pool's idle reaper sleeps a minute at a time on the Clock it was built
 * with, so a TestClock moved by years would run it once per minute of them.
 */
export const clientLayer = (url: string): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, unknown> =>
  PgClient.layer({ url: Redacted.make(url), maxConnections: 4 }).pipe(
    Layer.provide(Layer.succeed(Clock.Clock, Clock.Clock.defaultValue()))
  )

/** A migrated fresh database on `server` as a layer, with this process's compaction locks on it. */
export const migrated = (url: string) =>
  Layer.provideMerge(SqlCompactionLocks.layer, Layer.provideMerge(SqlMigrations.layer, clientLayer(url)))

export const withSql = <A, E, R>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, f)
