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
  Schedule.modifyDelay((_, delay) => Duration.min(delay, Duration.seconds(5))),
  Schedule.upTo("10 minutes")
)

interface Cause {
  readonly code?: unknown
  readonly message?: unknown
}

const causeOf = (error: SqlError): Cause =>
  typeof error.cause === "object" && error.cause !== null ? error.cause as Cause : {}

/** Lost or refused connections, and a server shutting down or starting up: worth waiting for. */
export const isTransient = (error: SqlError): boolean => {
  const { code, message } = causeOf(error)
  if (error.message === "Failed to acquire connection" || error.message === "Connection error") return true
  if (typeof code === "string") {
    // 08: connection exceptions; 57P01-57P03: admin shutdown, crash shutdown, cannot connect now.
    if (code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03") return true
    if (["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOENT"].includes(code)) return true
  }
  return typeof message === "string" &&
    /Connection terminated|connection timeout|Client has encountered a connection error/i.test(message)
}

/** The error's own words, never the connection settings. */
export const describe = (error: SqlError): string => {
  const { code, message } = causeOf(error)
  const detail = typeof message === "string" ? message : error.message
  return typeof code === "string" ? `${detail} (${code})` : detail
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
      // @effect/sql turns a failed COMMIT or ROLLBACK (the connection died in the transaction) into a defect.
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
