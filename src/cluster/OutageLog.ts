/**
 * One line per database outage in a runner's log. While PostgreSQL is away
 * every part of a runner fails on its own schedule: the cluster engine's
 * storage reads (each poll, with a stack), its shard-lock health checks,
 * and every memory operation waiting to retry (SqlResilience). The loggers
 * of the runner are wrapped so the first of these says the database is
 * unavailable and why, the rest are left out, and the first sign it is back
 * says so once. Anything else passes untouched. A failure after a minute
 * without one counts as a new outage (a recovery nobody announced).
 */
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { describe, isTransient } from "../memory/sql/SqlResilience.js"

const OUTAGE_TEXT = /^(database unavailable while|Could not read messages from storage)/
/** The engine's lock health: a symptom of an outage while one lasts, its own news otherwise (a slow database). */
const HEALTH_TEXT = /^Shard lock storage is unhealthy/
const BACK_TEXT = /^(database back;|Shard lock storage has recovered)/
/** SqlResilience's words: `database unavailable while WHAT (WHY); waiting for it to come back`. */
const RESILIENT_WHY = /^database unavailable while .*? \((.*)\); waiting for it to come back$/
const NEW_OUTAGE_AFTER_MS = 60_000
const QUIET_AFTER_BACK_MS = 10_000

const textOf = (message: unknown): string => Array.isArray(message) ? message.map(String).join(" ") : String(message)

/** A transient SqlError anywhere in the cause, through the engine's wrappers (`PersistenceError.cause`). */
const sqlProblem = (cause: Cause.Cause<unknown>): string | undefined => {
  for (const top of [...Cause.failures(cause), ...Cause.defects(cause)]) {
    let current: unknown = top
    for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
      if (current instanceof SqlError) return isTransient(current) ? describe(current) : undefined
      current = (current as { readonly cause?: unknown }).cause
    }
  }
  return undefined
}

/** `inner`, with a database outage's many failures told once and its end once. */
export const collapse = <Output>(inner: Logger.Logger<unknown, Output>): Logger.Logger<unknown, Output | undefined> => {
  let down = false
  let lastFailureAt = 0
  let backAt = Number.NEGATIVE_INFINITY
  return Logger.make((options) => {
    const text = textOf(options.message)
    const at = options.date.getTime()
    const problem = sqlProblem(options.cause)
    if (problem !== undefined || OUTAGE_TEXT.test(text)) {
      const fresh = !down || at - lastFailureAt > NEW_OUTAGE_AFTER_MS
      down = true
      lastFailureAt = at
      if (!fresh) return undefined
      const why = problem ?? RESILIENT_WHY.exec(text)?.[1] ?? text
      return inner.log({
        ...options,
        logLevel: LogLevel.Warning,
        message: `the database is unavailable (${why}); waiting for it to come back (its further failures are not logged until then)`,
        cause: Cause.empty
      })
    }
    if (down && HEALTH_TEXT.test(text)) return undefined
    if (BACK_TEXT.test(text)) {
      if (down) {
        down = false
        backAt = at
        return inner.log({ ...options, logLevel: LogLevel.Info, message: "the database is back; resuming", cause: Cause.empty })
      }
      if (at - backAt < QUIET_AFTER_BACK_MS) return undefined
    }
    return inner.log(options)
  })
}

/** Every logger of the layers it is provided to, collapsed. */
export const layer: Layer.Layer<never> = Layer.scopedDiscard(
  Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.map((logger) => collapse(logger)))
)
