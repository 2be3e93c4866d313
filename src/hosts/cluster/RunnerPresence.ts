/**
 * Runners counted only while they are connected to the database. A runner's
 * shard locks are advisory locks of its database session: when the runner
 * dies its connections close, PostgreSQL ends its sessions at once (on the
 * same machine or network, where the kernel closes the sockets) and its locks
 * are free. The engine would still count it among the runners until its
 * heartbeat is older than the lock expiration, and so keep its shards
 * assigned to it for that long.
 *
 * Every connection of a runner carries its address in its name
 * (application_name). Here the runners the engine reads are kept only while a
 * session with that name is open, so a dead runner's shards move at the
 * survivors' next poll, not at the lock expiration. A runner always sees
 * itself: it asks over its own connection. Where the sessions cannot be read
 * (a pooler that renames them, a database that refuses), the heartbeat alone
 * decides, as before. Nothing becomes less safe: a runner still holds only the
 * shards whose locks it took, and a live runner counted out keeps its locks.
 */
import * as crypto from "node:crypto"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"

const PREFIX = "planckclaw runner "

/** PostgreSQL keeps the first 63 bytes of a session's name, and rewrites any byte that is not printable ASCII. */
const NAME_BYTES = 63
/** Hex digits of the whole address's digest that end a name too long to be kept whole. */
const DIGEST_CHARS = 12

/** Anything but printable ASCII (and `%`) as its UTF-8 bytes' percent-escapes: what PostgreSQL keeps as given. */
const printable = (text: string): string =>
  text.replace(/[^\x20-\x24\x26-\x7e]/gu, (char) => [...Buffer.from(char, "utf8")].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`).join(""))

/**
 * The name of a runner's connections to the database (application_name), as
 * PostgreSQL keeps it, and another runner's never: an address too long to be
 * kept whole (two runners of one long host name would differ only past the
 * cut) is cut shorter and ends with a digest of the whole address.
 */
export const applicationName = (address: { readonly host: string; readonly port: number }): string => {
  const full = `${address.host}:${address.port}`
  const name = `${PREFIX}${printable(full)}`
  if (name.length <= NAME_BYTES) return name
  const digest = crypto.createHash("sha256").update(full).digest("hex").slice(0, DIGEST_CHARS)
  return `${name.slice(0, NAME_BYTES - DIGEST_CHARS - 1)}~${digest}`
}

/** `storage` whose `getRunners` leaves out runners without an open session. */
export const present = (
  storage: RunnerStorage.RunnerStorage["Service"],
  sql: SqlClient.SqlClient
): RunnerStorage.RunnerStorage["Service"] => {
  const connected = sql<{ readonly name: string }>`SELECT DISTINCT application_name AS name FROM pg_stat_activity
    WHERE datname = current_database() AND starts_with(application_name, ${PREFIX})`.pipe(
    Effect.map((rows) => new Set(rows.map((row) => row.name))),
    // Unreadable: every runner with a fresh heartbeat counts, the engine's own rule.
    Effect.catchTag("SqlError", () => Effect.succeed(undefined)),
    Effect.withTracerEnabled(false)
  )
  const getRunners = Effect.flatMap(storage.getRunners, (runners) =>
    Effect.map(connected, (names) =>
      // No session named at all: the names are not ours to read (a pooler), so none is judged by them.
      names === undefined || names.size === 0
        ? runners
        : runners.filter(([runner]) => names.has(applicationName(runner.address)))))
  return { ...storage, getRunners }
}

/** RunnerStorage from `inner`, counting only connected runners. */
export const layer = <E, R>(
  inner: Layer.Layer<RunnerStorage.RunnerStorage, E, R>
): Layer.Layer<RunnerStorage.RunnerStorage, E, R | SqlClient.SqlClient> =>
  Layer.effect(
    RunnerStorage.RunnerStorage,
    Effect.gen(function*() {
      return present(yield* RunnerStorage.RunnerStorage, yield* SqlClient.SqlClient)
    })
  ).pipe(Layer.provide(inner))
