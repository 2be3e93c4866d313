/**
 * Discord messages the gateway's holder has handed to the cluster and whose
 * reply is not yet in its outbox, in PostgreSQL. A row is written before the
 * message goes to the cluster and deleted once its reply is journaled in the
 * outbox; a runner that takes the gateway over finishes the rows left (sends
 * each message again under its key, which the cluster answers with the
 * stored reply or by running the turn once, and posts the reply), so a
 * holder's death loses no reply.
 */
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Discord from "../../interact/discord/DiscordInteract.js"
import { keyFor, type OwedReplies, parseStored } from "../../interact/discord/OwedMessages.js"
import { resilient } from "../../memory/sql/SqlResilience.js"

const migrations = Migrator.fromRecord({
  "1_owed": Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`CREATE TABLE IF NOT EXISTS planckclaw_discord_owed (
      seq BIGSERIAL,
      message_key TEXT PRIMARY KEY,
      message TEXT NOT NULL
    )`)
})

export const make: Effect.Effect<OwedReplies, SqlError | Migrator.MigrationError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Runners starting together race to create the migrations table: the loser tries again.
  yield* Migrator.make({})({ loader: migrations, table: "planckclaw_discord_migrations" }).pipe(
    Effect.retry({ times: 5, schedule: Schedule.spaced("200 millis"), while: (error) => error._tag === "SqlError" })
  )
  return {
    record: (message) =>
      sql`INSERT INTO planckclaw_discord_owed (message_key, message) VALUES (${keyFor(message)}, ${JSON.stringify(message)})
        ON CONFLICT (message_key) DO NOTHING`.pipe(Effect.asVoid, resilient("noting a Discord message owed a reply")),
    done: (message) =>
      sql`DELETE FROM planckclaw_discord_owed WHERE message_key = ${keyFor(message)}`.pipe(
        Effect.asVoid,
        resilient("noting a Discord reply journaled"),
        Effect.catch((error) => Effect.logWarning(`a Discord reply stays noted as owed (${error.message}); a takeover would post it again`))
      ),
    pending: sql<{ message: string }>`SELECT message FROM planckclaw_discord_owed ORDER BY seq`.pipe(
      Effect.map((rows) =>
        rows.flatMap((row): Array<Discord.DiscordMessage> => {
          const message = parseStored(row.message)
          return message === undefined ? [] : [message]
        })
      ),
      resilient("reading the Discord messages owed a reply")
    )
  }
})
