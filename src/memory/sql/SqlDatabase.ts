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
  (raw) =>
    postgresUrl(raw) === undefined
      ? "expected a postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE); the value is not shown, as it may hold a password"
      : { value: Redacted.make(raw) }
)

/** Where the URL points, for messages: host, port and database, never the user's password. */
export const describeUrl = (url: Redacted.Redacted<string>): string => {
  const parsed = postgresUrl(Redacted.value(url))
  return parsed === undefined
    ? "PLANCKCLAW_DATABASE_URL (not a postgres:// URL)"
    : `PostgreSQL at ${parsed.hostname}${parsed.port === "" ? "" : `:${parsed.port}`}${parsed.pathname}`
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
