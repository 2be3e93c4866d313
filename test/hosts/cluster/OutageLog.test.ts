/**
 * A runner's log through a database outage: the engine's storage failures
 * and memory's waits, each logged again and again while PostgreSQL is away,
 * come out as one line saying the database is unavailable, and one saying
 * it is back; other lines pass; an outage after a quiet minute is told anew.
 */
import { ConnectionError, SqlError } from "effect/sql/SqlError"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Latch, Logger } from "effect"
import { TestClock } from "effect/testing"
import type { SqlError as SqlErrorType } from "effect/sql/SqlError"
import * as OutageLog from "../../../src/hosts/cluster/OutageLog.js"

/** What @effect/sql-pg fails with when the server refuses the connection. */
const refused = new SqlError({
  reason: new ConnectionError({
    cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }),
    message: "PgConnection: Failed to connect",
    operation: "connect"
  })
})
/** What effect/cluster wraps a storage failure in. */
const persistence = { _tag: "PersistenceError", message: "storage", cause: refused }

/** A logger recording each line as "LEVEL message" (" +cause" when it carries one), through OutageLog.collapse. */
const recorder = (withProbe: boolean) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const recording = Logger.make(({ logLevel, message, cause }) =>
      void lines.push(`${logLevel.toUpperCase()} ${Array.isArray(message) ? message.join(" ") : String(message)}${cause.reasons.length === 0 ? "" : " +cause"}`))
    const probe = { latch: yield* Latch.make(false), now: false, spells: 0 }
    const logged = Effect.provide(Logger.layer([OutageLog.collapse(recording, withProbe ? probe : undefined)]))
    return { lines, probe, logged }
  })

describe("OutageLog.collapse", () => {
  it.effect("one line per outage and one when the database is back; the rest passes", () =>
    Effect.gen(function*() {
      const { lines, logged } = yield* recorder(false)
      yield* Effect.gen(function*() {
        yield* Effect.logInfo("HTTP API on 127.0.0.1:7878")
        // A slow database, not an outage: the engine's own line passes.
        yield* Effect.logError("Shard lock storage is unhealthy", Cause.die(new Error("Operation timed out after '2s'")))
        yield* Effect.logInfo("Shard lock storage has recovered")
        for (let poll = 0; poll < 5; poll++) {
          yield* Effect.logWarning("Could not read messages from storage", Cause.fail(persistence))
          yield* TestClock.adjust("1 second")
        }
        // A storage call that timed out meanwhile: part of the outage, not a line of its own.
        yield* Effect.logWarning("Could not acquire/release shards", Cause.fail({ _tag: "PersistenceError", cause: new Cause.TimeoutError("Operation timed out after '2s'") }))
        yield* Effect.logWarning("database unavailable while reading the memory of agent a (read ECONNRESET (ECONNRESET)); waiting for it to come back")
        yield* Effect.logError("Shard lock storage is unhealthy", Cause.die(new Error("Operation timed out after '2s'")))
        yield* Effect.logInfo("Shard lock storage has recovered")
        yield* Effect.logInfo("database back; reading the memory of agent a resumed")
        // The engine catching up: part of the outage too, for a few seconds.
        yield* Effect.logWarning("No healthy runners available")
        yield* Effect.logWarning("Could not release shards, retrying", Cause.fail({ _tag: "PersistenceError", cause: new Cause.TimeoutError("Operation timed out after '2s'") }))
        yield* Effect.logError("agent b: something unrelated", Cause.fail(new Error("boom")))
        yield* TestClock.adjust("2 minutes")
        // Long after: the engine's own news again.
        yield* Effect.logWarning("No healthy runners available")
        yield* Effect.logWarning("database unavailable while appending to the history of agent c (read ECONNRESET (ECONNRESET)); waiting for it to come back")
        yield* Effect.logWarning("Could not read messages from storage", Cause.fail(persistence))
      }).pipe(logged)
      expect(lines).toEqual([
        "INFO HTTP API on 127.0.0.1:7878",
        "ERROR Shard lock storage is unhealthy +cause",
        "INFO Shard lock storage has recovered",
        "WARN the database is unavailable (connect ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED)); waiting for it to come back (its further failures are not logged until then)",
        "INFO the database is back; resuming",
        "ERROR agent b: something unrelated +cause",
        "WARN No healthy runners available",
        "WARN the database is unavailable (read ECONNRESET (ECONNRESET)); waiting for it to come back (its further failures are not logged until then)"
      ])
    }))

  it.effect("the engine's lock health failing (a timeout, no SqlError): the runner asks the database while it lasts; unreachable is told as the one line, slow is not", () =>
    Effect.gen(function*() {
      const { lines, logged, probe } = yield* recorder(true)
      let database: "slow" | "fine" | "gone" = "slow"
      let checks = 0
      const check = Effect.suspend((): Effect.Effect<void, SqlErrorType> => {
        checks++
        return database === "slow" ? Effect.never : database === "fine" ? Effect.void : Effect.fail(refused)
      })
      yield* OutageLog.probing(check, "2 seconds").pipe(Effect.provideService(OutageLog.LockProbe, probe), logged, Effect.forkScoped)
      const unhealthy = Effect.logError("Shard lock storage is unhealthy", Cause.fail(new Cause.TimeoutError("Operation timed out after '2s'")))

      // A loaded machine: the engine's refresh times out, the database answers late, then in time. Nothing told.
      yield* unhealthy.pipe(logged)
      yield* TestClock.adjust("4 seconds")
      database = "fine"
      yield* TestClock.adjust("2 seconds")
      expect(checks).toBe(2)
      yield* Effect.logInfo("Shard lock storage has recovered").pipe(logged)
      yield* TestClock.adjust("10 seconds")
      expect(checks).toBe(2)

      // The outage whose first sign is the engine's timeout, after which the engine's probes say no more.
      database = "gone"
      yield* unhealthy.pipe(logged)
      yield* Effect.logWarning("Shard lock storage is still unhealthy", Cause.fail(new Cause.TimeoutError("Operation timed out after '2s'"))).pipe(logged)
      yield* TestClock.adjust("2 seconds")
      expect(checks).toBe(3)
      // Told: no more checks until the database is back.
      yield* TestClock.adjust("30 seconds")
      expect(checks).toBe(3)
      database = "fine"
      yield* Effect.logInfo("Shard lock storage has recovered").pipe(logged)
      yield* TestClock.adjust("30 seconds")
      expect(checks).toBe(3)

      expect(lines).toEqual([
        "ERROR Shard lock storage is unhealthy +cause",
        "INFO Shard lock storage has recovered",
        "ERROR Shard lock storage is unhealthy +cause",
        "WARN the database is unavailable (connect ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED)); waiting for it to come back (its further failures are not logged until then)",
        "INFO the database is back; resuming"
      ])
    }))

  it.effect("a database back before the engine's locks recover: asked again, and a relapse is told", () =>
    Effect.gen(function*() {
      const { lines, logged, probe } = yield* recorder(true)
      let checks = 0
      const check = Effect.suspend(() => {
        checks++
        return Effect.fail(refused)
      })
      yield* OutageLog.probing(check, "2 seconds").pipe(Effect.provideService(OutageLog.LockProbe, probe), logged, Effect.forkScoped)
      yield* Effect.logWarning("Could not read messages from storage", Cause.fail(persistence)).pipe(logged)
      yield* Effect.logError("Shard lock storage is unhealthy", Cause.fail(persistence)).pipe(logged)
      yield* TestClock.adjust("10 seconds")
      expect(checks).toBe(0)
      yield* Effect.logInfo("database back; reading the memory of agent a resumed").pipe(logged)
      yield* TestClock.adjust("2 seconds")
      expect(checks).toBe(1)
      expect(lines).toEqual([
        "WARN the database is unavailable (connect ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED)); waiting for it to come back (its further failures are not logged until then)",
        "INFO the database is back; resuming",
        "WARN the database is unavailable (connect ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED)); waiting for it to come back (its further failures are not logged until then)"
      ])
    }))

  it.effect("a database that does not answer at all (hung, or a network dropping packets): told after three checks in a row without an answer", () =>
    Effect.gen(function*() {
      const { lines, logged, probe } = yield* recorder(true)
      yield* OutageLog.probing(Effect.never, "2 seconds").pipe(Effect.provideService(OutageLog.LockProbe, probe), logged, Effect.forkScoped)
      const unhealthy = Effect.logError("Shard lock storage is unhealthy", Cause.fail(new Cause.TimeoutError("Operation timed out after '2s'")))
      // Two checks unanswered, then the engine's locks recover: a slow spell, and the count starts over.
      yield* unhealthy.pipe(logged)
      yield* TestClock.adjust("8 seconds")
      yield* Effect.logInfo("Shard lock storage has recovered").pipe(logged)
      yield* unhealthy.pipe(logged)
      yield* TestClock.adjust("8 seconds")
      expect(lines).toEqual([
        "ERROR Shard lock storage is unhealthy +cause",
        "INFO Shard lock storage has recovered",
        "ERROR Shard lock storage is unhealthy +cause"
      ])
      // The spell's third unanswered check (its first check waited for the last spell's pause to end).
      yield* TestClock.adjust("8 seconds")
      expect(lines.slice(3)).toEqual([
        "WARN the database is unavailable (no answer within 2s, 3 times in a row); waiting for it to come back (its further failures are not logged until then)"
      ])
    }))
})
