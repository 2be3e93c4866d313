/**
 * One line per database outage in a runner's log. While PostgreSQL is away
 * every part of a runner fails on its own schedule: the cluster engine's
 * storage reads (each poll, with a stack), its shard-lock health checks,
 * and every memory operation waiting to retry (SqlResilience). The loggers
 * of the runner are wrapped so the first of these says the database is
 * unavailable and why, the rest are left out, and the first sign it is back
 * says so once. While it lasts and for a few seconds after, the engine's
 * other storage failures (a storage call timed out) and its catching up
 * (no runner healthy yet, a shard release still under way) are left out
 * too. Anything else passes untouched. A failure after a minute without one counts as a new outage
 * (a recovery nobody announced).
 *
 * The engine's shard-lock health check failing says nothing of why: a
 * database that is only slow (a loaded machine) times it out too. But after
 * it the engine lets go of its shards and probes them, each failed probe a
 * line of its own that says no more (left out here), so it can be the
 * outage's only sign. While it lasts and no outage is told, the runner
 * asks the database itself (`SELECT 1`, every lock refresh interval); a
 * failure for want of the database is logged as one more sign, told as the
 * one line. A slow answer proves nothing; no answer three times running (a
 * database that hangs, a network that drops) is a sign too.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { SqlError } from "effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Latch from "effect/Latch"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import { describe, isTransient } from "../../memory/sql/SqlResilience.js"

const OUTAGE_TEXT = /^(database unavailable while|Could not read messages from storage)/
/** The engine's lock health: a symptom of an outage while one lasts, its own news otherwise (a slow database). */
const HEALTH_TEXT = /^Shard lock storage is unhealthy/
/** The engine's probe of its locks while they are unhealthy, once per refresh interval: the spell is told already. */
const STILL_TEXT = /^Shard lock storage is still unhealthy/
const RECOVERED_TEXT = /^Shard lock storage has recovered/
const BACK_TEXT = /^(database back;|Shard lock storage has recovered)/
/** SqlResilience's words: `database unavailable while WHAT (WHY); waiting for it to come back`. */
const RESILIENT_WHY = /^database unavailable while .*? \((.*)\); waiting for it to come back$/
/** The engine catching up after an outage: no runner's heartbeat is fresh yet, a release of its shards still under way. */
const AFTERMATH_TEXT = /^(No healthy runners available|Forced shard release is still pending)/
const NEW_OUTAGE_AFTER_MS = 60_000
const QUIET_AFTER_BACK_MS = 10_000

const textOf = (message: unknown): string => Array.isArray(message) ? message.map(String).join(" ") : String(message)

/** The errors of `cause` and, within each, the chain of their causes (a few deep). */
const causeChains = function*(cause: Cause.Cause<unknown>): Generator<unknown> {
  for (const reason of cause.reasons) {
    let current: unknown = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined
    for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
      yield current
      current = (current as { readonly cause?: unknown }).cause
    }
  }
}

/** A transient SqlError anywhere in the cause, through the engine's wrappers (`PersistenceError.cause`). */
const sqlProblem = (cause: Cause.Cause<unknown>): string | undefined => {
  for (const error of causeChains(cause)) {
    if (error instanceof SqlError) return isTransient(error) ? describe(error) : undefined
  }
  return undefined
}

/**
 * The engine's storage failing for a reason of its own (a storage call timed
 * out): no sign of an outage by itself, but part of one while it lasts.
 */
const storageFailure = (cause: Cause.Cause<unknown>): boolean => {
  for (const error of causeChains(cause)) {
    if ((error as { readonly _tag?: unknown })._tag === "PersistenceError") return true
  }
  return false
}

/**
 * Open while the database should be asked whether it is there: the engine's
 * shard locks are unhealthy and no outage is being told.
 */
export class LockProbe extends Context.Service<LockProbe, ProbeWanted>()("planckclaw/cluster/OutageLog/LockProbe") {}

/** Whether the database should be asked, a latch open while it should (the probe waits on it), and how many times it started to be. */
export interface ProbeWanted {
  readonly latch: Latch.Latch
  now: boolean
  spells: number
}

/** Checks without an answer, in a row, that count as a sign: by then the engine's locks have lapsed twice over. */
const UNANSWERED_SIGN = 3

/** `inner`, with a database outage's many failures told once and its end once; `probe` opened while one is suspected. */
export const collapse = <Output>(
  inner: Logger.Logger<unknown, Output>,
  probe?: ProbeWanted
): Logger.Logger<unknown, Output | undefined> => {
  let down = false
  let locksUnhealthy = false
  let lastFailureAt = 0
  let backAt = Number.NEGATIVE_INFINITY
  const wanted = () => {
    if (probe === undefined) return
    const now = locksUnhealthy && !down
    if (now && !probe.now) probe.spells++
    probe.now = now
    if (now) probe.latch.openUnsafe()
    else probe.latch.closeUnsafe()
  }
  return Logger.make((options) => {
    const text = textOf(options.message)
    const at = options.date.getTime()
    const problem = sqlProblem(options.cause)
    if (HEALTH_TEXT.test(text)) locksUnhealthy = true
    if (RECOVERED_TEXT.test(text)) locksUnhealthy = false
    if (problem !== undefined || OUTAGE_TEXT.test(text)) {
      const fresh = !down || at - lastFailureAt > NEW_OUTAGE_AFTER_MS
      down = true
      lastFailureAt = at
      wanted()
      if (!fresh) return undefined
      const why = problem ?? RESILIENT_WHY.exec(text)?.[1] ?? text
      return inner.log({
        ...options,
        logLevel: "Warn",
        message: `the database is unavailable (${why}); waiting for it to come back (its further failures are not logged until then)`,
        cause: Cause.empty
      })
    }
    wanted()
    const outageOrJustAfter = down || at - backAt < QUIET_AFTER_BACK_MS
    if ((down && HEALTH_TEXT.test(text)) || STILL_TEXT.test(text)) return undefined
    if (outageOrJustAfter && (storageFailure(options.cause) || AFTERMATH_TEXT.test(text))) return undefined
    if (BACK_TEXT.test(text)) {
      if (down) {
        down = false
        backAt = at
        wanted()
        return inner.log({ ...options, logLevel: "Info", message: "the database is back; resuming", cause: Cause.empty })
      }
      if (at - backAt < QUIET_AFTER_BACK_MS) return undefined
    }
    return inner.log(options)
  })
}

/** Every logger of the layers it is provided to, collapsed; the LockProbe they open for `probeLayer`. */
export const layer: Layer.Layer<LockProbe> = Layer.effectContext(
  Effect.gen(function*() {
    const probe: ProbeWanted = { latch: yield* Latch.make(false), now: false, spells: 0 }
    const loggers = yield* References.CurrentLoggers
    return Context.make(LockProbe, probe).pipe(
      Context.add(References.CurrentLoggers, new Set([...loggers].map((logger) => collapse(logger, probe))))
    )
  })
)

const timedOut = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((reason) => Cause.isFailReason(reason) && Cause.isTimeoutError(reason.error))

/**
 * While the LockProbe is open, `check` every `every`, bounded by as much,
 * until a sign is logged (the collapse tells it): a failure for want of the
 * database, or no answer UNANSWERED_SIGN times in a row. A late answer is none.
 */
export const probing = (check: Effect.Effect<unknown, SqlError>, every: Duration.Input) =>
  Effect.gen(function*() {
    const probe = yield* LockProbe
    // One spell of unhealthy locks; the count of unanswered checks starts over with the next.
    const spell = Effect.gen(function*() {
      const started = probe.spells
      const lasts = () => probe.now && probe.spells === started
      let unanswered = 0
      while (lasts()) {
        yield* Effect.sleep(every)
        if (!lasts()) return
        const exit = yield* Effect.exit(Effect.timeout(check, every))
        unanswered = Exit.isFailure(exit) && timedOut(exit.cause) ? unanswered + 1 : 0
        const why = Exit.isFailure(exit) ? sqlProblem(exit.cause) : undefined
        const sign = why ?? (unanswered >= UNANSWERED_SIGN ? `no answer within ${Duration.format(Duration.fromInputUnsafe(every))}, ${unanswered} times in a row` : undefined)
        if (sign !== undefined) {
          return yield* Effect.logWarning(`database unavailable while checking the shard lock storage (${sign}); waiting for it to come back`)
        }
      }
    })
    return yield* Effect.forever(Effect.andThen(probe.latch.await, spell))
  })

/** `probing` with `SELECT 1` over the runner's database. */
export const probeLayer = (every: Duration.Input): Layer.Layer<never, never, LockProbe | SqlClient.SqlClient> =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* Effect.forkScoped(probing(sql`SELECT 1`, every))
    })
  )
