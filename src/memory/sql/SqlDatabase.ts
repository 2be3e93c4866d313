/**
 * The PostgreSQL that holds memory: PLANCKCLAW_DATABASE_URL (a
 * postgres:// URL, redacted: its password shows nowhere, not in errors,
 * logs or debug output), the client on it, and the migrations run before
 * anything uses it.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import { checkedString } from "../../config/ConfigRange.js"
import { DatabaseUrl } from "../../config/settings/Cluster.js"
import { MemoryError } from "../MemoryDir.js"
import * as SqlMigrations from "./SqlMigrations.js"
import { describe } from "./SqlResilience.js"

/** The URL parsed, when it is a postgres:// (or postgresql://) one. */
const postgresUrl = (raw: string): URL | undefined => {
  const parsed = URL.canParse(raw) ? new URL(raw) : undefined
  return parsed !== undefined && (parsed.protocol === "postgres:" || parsed.protocol === "postgresql:") ? parsed : undefined
}

/**
 * Read as a string and redacted at once: unset, it is reported as not set (Config.Redacted's refusal says
 * "Expected string"). Anything but a postgres:// URL is refused without being shown: `bob:pw@host/db`
 * parses as a URL of scheme `bob:` whose path holds the password.
 */
export const DatabaseUrlConfig: Config.Config<Redacted.Redacted<string>> = checkedString(
  DatabaseUrl.key,
  (raw) => {
    const parsed = postgresUrl(raw)
    if (parsed === undefined) {
      return "expected a postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE); the value is not shown, as it may hold a password"
    }
    // `user:1234/pw@host/db` is host `user`, port 1234 and database `pw@host/db`: the password would be named as the server.
    const splitEarly = parsed.pathname.includes("@") || parsed.hash.includes("@") ||
      [...parsed.searchParams.keys()].some((name) => name.includes("@"))
    return splitEarly
      ? "its password holds an unescaped /, ? or #, which ends the URL's user and password early: percent-encode them " +
        "(%2F, %3F, %23; an @ in the database name as %40); the value is not shown, as it may hold a password"
      : { value: Redacted.make(raw) }
  }
)

/** A URL's component as the driver reads it: percent-decoded, or as it is when that fails. */
const decoded = (component: string): string => {
  const result = Result.try(() => decodeURIComponent(component))
  return Result.isSuccess(result) ? result.success : component
}

/**
 * Where the URL points, for messages: the host, port and database the driver connects to (its `host`, `port`
 * and `dbname` parameters win, as in libpq), never the user or the password.
 */
export const describeUrl = (url: Redacted.Redacted<string>): string => {
  const parsed = postgresUrl(Redacted.value(url))
  if (parsed === undefined) return "PLANCKCLAW_DATABASE_URL (not a postgres:// URL)"
  const host = parsed.searchParams.get("host") ?? decoded(parsed.hostname)
  const port = parsed.searchParams.get("port") ?? parsed.port
  const database = parsed.searchParams.get("dbname") ?? decoded(parsed.pathname.replace(/^\//, ""))
  return `PostgreSQL at ${host}${port === "" ? "" : `:${port}`}/${database}`
}

/** The client on `url`, migrated; a failure to connect or migrate is a MemoryError naming the server, not the password. */
export const layerFor = (url: Redacted.Redacted<string>): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, MemoryError> =>
  Layer.catch(
    Layer.provideMerge(SqlMigrations.layer, PgClient.layer({ url, applicationName: "planckclaw" })),
    (error) =>
      Layer.effectContext<SqlClient.SqlClient | PgClient.PgClient, MemoryError, never>(Effect.fail(
        new MemoryError({
          reason: "io",
          message: `cannot use the ${describeUrl(url)}: ${error._tag === "SqlError" ? describe(error) : error.message}`
        })
      ))
  )

/** The client on PLANCKCLAW_DATABASE_URL, migrated. */
export const layer: Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, MemoryError | Config.ConfigError> = Layer
  .unwrap(Effect.map(DatabaseUrlConfig, layerFor))
