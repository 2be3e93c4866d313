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
import { DatabaseUrl } from "../../config/settings/Cluster.js"
import { MemoryError } from "../MemoryDir.js"
import * as SqlMigrations from "./SqlMigrations.js"
import { describe } from "./SqlResilience.js"

/** Read as a string and redacted at once: unset, it is reported as not set (Config.Redacted's refusal says "Expected string"). */
export const DatabaseUrlConfig: Config.Config<Redacted.Redacted<string>> = Config.String(DatabaseUrl.key).pipe(
  Config.map((url) => Redacted.make(url))
)

/** Where the URL points, for messages: host, port and database, never the user's password. */
export const describeUrl = (url: Redacted.Redacted<string>): string => {
  const parsed = URL.canParse(Redacted.value(url)) ? new URL(Redacted.value(url)) : undefined
  return parsed === undefined
    ? "PLANCKCLAW_DATABASE_URL (not a URL)"
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
