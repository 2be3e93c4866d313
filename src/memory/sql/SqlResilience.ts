/**
 * How memory in PostgreSQL lives through a database that goes away and
 * comes back: an operation that failed for want of a connection is run
 * again, whole, on an explicit schedule, and resumes once the server
 * answers. Each operation is one statement or one transaction, so running
 * it again is safe (an exchange stored by a commit whose answer was lost is
 * known by its key and not stored twice). Anything else (a statement the
 * server refuses) fails at once as a MemoryError. Messages never hold the
 * database URL: errors are described by their code and text only.
 */
import { SqlError } from "effect/sql/SqlError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { MemoryError } from "../MemoryDir.js"

/** Backs off from 100 ms to a 5 s pace, for up to 10 minutes; then the operation fails. */
export const defaultRetry: Schedule.Schedule<unknown> = Schedule.exponential("100 millis", 2).pipe(
  Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(5)))),
  Schedule.upTo({ duration: "10 minutes" })
)

/**
 * What the driver said: @effect/sql-pg wraps the server's error (its SQLSTATE
 * in `code`) or the socket's (ECONNREFUSED...) as the cause of the
 * SqlError's reason; the reason's own message is the driver's generic one.
 */
const detailOf = (error: SqlError): { readonly code: string | undefined; readonly message: string } => {
  const inner: unknown = error.reason.cause
  const fields = typeof inner === "object" && inner !== null ? inner as { readonly code?: unknown; readonly message?: unknown } : {}
  return {
    code: typeof fields.code === "string" ? fields.code : undefined,
    message: typeof fields.message === "string" && fields.message.length > 0 ? fields.message : error.message
  }
}

/** Lost or refused connections, and a server shutting down, starting up or full of clients: worth waiting for. */
export const isTransient = (error: SqlError): boolean => {
  // The driver's own verdict: a connection that failed, was lost, timed out or could not be had from the pool.
  if (error.reason._tag === "ConnectionError") return true
  const { code } = detailOf(error)
  if (code === undefined) return false
  // 08: connection exceptions; 57P01-57P03: admin shutdown, crash shutdown, cannot connect now; 53300: too many
  // connections (max_connections, or the role's CONNECTION LIMIT, reached: runners' pools together may ask more).
  return code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300" ||
    ["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOENT"].includes(code)
}

/** The error's own words, never the connection settings. */
export const describe = (error: SqlError): string => {
  const { code, message } = detailOf(error)
  return code === undefined ? message : `${message} (${code})`
}

export const toMemoryError = (what: string) => (error: SqlError): MemoryError =>
  new MemoryError({ reason: "io", message: `database: ${what} failed: ${describe(error)}`, cause: error })

/**
 * `effect` run again on `schedule` while it fails for want of the database,
 * with one warning when it starts waiting; its failure as a MemoryError.
 */
const transient = (error: unknown): error is SqlError => error instanceof SqlError && isTransient(error)

export const resilient = (what: string, schedule: Schedule.Schedule<unknown> = defaultRetry) =>
<A, E, R>(effect: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError> | MemoryError, R> =>
  Effect.suspend(() => {
    let warned = false
    return effect.pipe(
      // effect/sql turns a failed COMMIT or ROLLBACK (the connection died in the transaction) into a defect.
      Effect.catchDefect((defect) => defect instanceof SqlError ? Effect.fail(defect) : Effect.die(defect)),
      Effect.tapError((error) => {
        if (warned || !transient(error)) return Effect.void
        warned = true
        return Effect.logWarning(`database unavailable while ${what} (${describe(error)}); waiting for it to come back`)
      }),
      Effect.retry({ schedule, while: transient }),
      Effect.tap(() => warned ? Effect.logInfo(`database back; ${what} resumed`) : Effect.void),
      Effect.mapError((error) =>
        error instanceof SqlError ? toMemoryError(what)(error) : error as Exclude<E, SqlError>
      )
    )
  })
