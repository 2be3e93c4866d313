/**
 * The runner's own check of the database, against a real PostgreSQL: the
 * engine's only complaint is its lock health (a timeout, no SqlError), the
 * server is stopped abruptly, and the runner's log still says, in its one
 * line, that the database is unavailable and why; and that it is back.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Layer, Queue, Redacted } from "effect"
import * as OutageLog from "../../../src/hosts/cluster/OutageLog.js"
import { captureLogs } from "../../support/LogCapture.js"
import { startPostgres } from "../../support/Postgres.js"
import * as Sandbox from "../../support/Sandbox.js"

describe("OutageLog.probeLayer", () => {
  it.live("the engine's lock health fails while PostgreSQL is down: the runner's check finds it gone, told as the one line", () =>
    Effect.gen(function*() {
      const server = yield* startPostgres({ database: "outage_probe" })
      const logs = yield* captureLogs
      // What the engine logs, when the test says so, from inside the runner's layers.
      const engine = yield* Queue.unbounded<string>()
      const engineLines = Layer.effectDiscard(Effect.forkScoped(Effect.forever(
        Queue.take(engine).pipe(Effect.flatMap((text) =>
          text.startsWith("Shard lock storage is unhealthy")
            ? Effect.logError(text, Cause.fail(new Cause.TimeoutError("Operation timed out after '2s'")))
            : Effect.logInfo(text)
        ))
      )))
      const runner = Layer.merge(
        OutageLog.probeLayer("500 millis").pipe(Layer.provide(PgClient.layer({ url: Redacted.make(server.url) }))),
        engineLines
      ).pipe(Layer.provide(OutageLog.layer), Layer.provide(logs.layer))
      yield* Layer.build(runner)

      yield* server.stop
      yield* Queue.offer(engine, "Shard lock storage is unhealthy")
      const told = yield* Sandbox.eventually("the runner to say the database is unavailable", () =>
        logs.lines.find((line) => line.startsWith("WARN the database is unavailable")))
      expect(told).toMatch(/^WARN the database is unavailable \(.*ECONNREFUSED.*\); waiting for it to come back/)

      yield* server.start
      yield* Queue.offer(engine, "Shard lock storage has recovered")
      yield* Sandbox.eventually("the runner to say the database is back", () => logs.lines.includes("INFO the database is back; resuming") || undefined)
      expect(logs.lines).toEqual(["ERROR Shard lock storage is unhealthy", told, "INFO the database is back; resuming"])
    }))
})
