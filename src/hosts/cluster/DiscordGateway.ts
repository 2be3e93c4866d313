/**
 * The Discord gateway of a cluster. A bot has one gateway connection, so of
 * the runners started with `--bridge discord` exactly one holds it: the one
 * holding a PostgreSQL advisory lock, on a connection of its own. The others
 * wait, asking again every PLANCKCLAW_CLUSTER_POLL, and one takes over when
 * the lock is released: its runner stopped, or died (PostgreSQL ends a dead
 * client's session and its locks with it). The holder checks at the same pace
 * that its session still holds the lock; if not (the database restarted), it
 * lets the gateway go and waits again, so two runners never answer together.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { SqlError } from "effect/sql/SqlError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"

/** The lock's key ("planck" in ASCII): one gateway per database, so per cluster. */
const lockKey = "123610793403243"

/**
 * One term as holder: waits for the lock, then runs `routes` until they end
 * (their failure is the caller's) or the lock is lost (then succeeds).
 */
const term = <E, R>(routes: Effect.Effect<never, E, R>, poll: Duration.Duration) =>
  Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connection = yield* sql.reserve
    const ask = (query: string) =>
      Effect.map(connection.executeUnprepared(query, [], undefined), (rows) => (rows[0] as { held?: unknown } | undefined)?.held === true)
    let told = false
    while (!(yield* ask(`SELECT pg_try_advisory_lock(${lockKey}) AS held`))) {
      if (!told) yield* Effect.logInfo("another runner holds the Discord gateway; this one takes over when it goes")
      told = true
      yield* Effect.sleep(poll)
    }
    // The connection goes back to the pool: its session must not keep the lock.
    yield* Effect.addFinalizer(() => Effect.ignore(ask(`SELECT pg_advisory_unlock(${lockKey}) AS held`)))
    yield* Effect.logInfo("this runner holds the Discord gateway")
    const stillHeld = ask(
      "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()) AS held"
    )
    const lost = stillHeld.pipe(
      Effect.repeat({ schedule: Schedule.spaced(poll), while: (held) => held }),
      Effect.catch(() => Effect.void),
      Effect.andThen(Effect.logWarning("this runner lost the Discord gateway lock (the database went away); waiting to hold it again"))
    )
    return yield* Effect.raceFirst(routes, lost)
  }))

/**
 * Runs `routes` while this runner holds the gateway, for as long as the
 * process lives; the database going away only makes it wait.
 */
export const hold = <E, R>(routes: Effect.Effect<never, E, R>, pollSeconds: number): Effect.Effect<never, E, R | SqlClient.SqlClient> => {
  const poll = Duration.millis(Math.round(pollSeconds * 1000))
  return term(routes, poll).pipe(
    Effect.catchIf(
      (error): error is SqlError => error instanceof SqlError,
      (error) =>
        Effect.andThen(Effect.logWarning(`the Discord gateway lock cannot be asked for (${error.message}); trying again`), Effect.sleep(poll))
    ),
    Effect.forever
  )
}
