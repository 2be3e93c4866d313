import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Ref, Schedule, Scope } from "effect"
import * as SqlInbox from "../../../src/memory/sql/SqlInbox.js"
import * as SqlMemory from "../../../src/memory/sql/SqlMemory.js"
import { usePostgres } from "../../support/Postgres.js"
import { eventually } from "../../support/Sandbox.js"
import { clientLayer, freshDatabase, migrated } from "./SqlKit.js"

const server = usePostgres()

describe("SQL memory through a database outage", () => {
  it.live("operations wait while the server is down and resume when it is back, losing nothing", () =>
    Effect.gen(function*() {
      const postgres = yield* server
      const url = yield* freshDatabase(postgres)
      yield* Effect.gen(function*() {
        // Every failed attempt is counted, so the test knows the writes really waited.
        const attempts = yield* Ref.make(0)
        const retry = Schedule.spaced("50 millis").pipe(Schedule.tap(() => Ref.update(attempts, (n) => n + 1)))
        const memory = yield* SqlMemory.make("alice", { retry })
        const inbox = yield* SqlInbox.make("alice", { retry })
        yield* memory.append([{ role: "user", content: "before" }, { role: "assistant", content: "outage" }])

        yield* postgres.stop
        const during = yield* Effect.forkChild(Effect.gen(function*() {
          const pending = yield* inbox.accept({ channel: "http", text: "during", idempotencyKey: "k-during" })
          yield* memory.append([{ role: "user", content: "during" }, { role: "assistant", content: "outage" }], {
            exchange: pending.key!
          })
          yield* inbox.answered(pending, "outage", true)
          return pending
        }))
        const retriedBeforeRestart = yield* eventually("a write retrying against the stopped server", () => {
          const n = Effect.runSync(Ref.get(attempts))
          return n >= 2 ? n : undefined
        })
        expect(retriedBeforeRestart).toBeGreaterThanOrEqual(2)
        expect(during.pollUnsafe()).toBeUndefined()
        yield* postgres.start
        const pending = yield* Fiber.join(during)
        expect(pending.id).toBeGreaterThan(0)

        expect((yield* memory.snapshot(10)).history).toEqual([
          { role: "user", content: "before" },
          { role: "assistant", content: "outage" },
          { role: "user", content: "during" },
          { role: "assistant", content: "outage" }
        ])
        // The journal kept the message and its decided reply across the outage.
        const again = yield* inbox.accept({ channel: "http", text: "during", idempotencyKey: "k-during" })
        expect(again.reply).toEqual(Option.some({ text: "outage", stored: true }))
      }).pipe(Effect.scoped, Effect.provide(migrated(url)))
    }), 120_000)

  it.live("an operation waits while the server refuses another connection (too many clients), and goes on once one is free", () =>
    Effect.gen(function*() {
      const postgres = yield* server
      const url = yield* freshDatabase(postgres)
      // A role allowed one connection: a second is refused with 53300, as max_connections refuses one more.
      const role = `limited_${process.pid}`
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe(`DROP ROLE IF EXISTS ${role}`)
        yield* sql.unsafe(`CREATE ROLE ${role} LOGIN PASSWORD 'limited-pw' CONNECTION LIMIT 1`)
        yield* sql.unsafe(`GRANT ALL ON ALL TABLES IN SCHEMA public TO ${role}`)
        yield* sql.unsafe(`GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ${role}`)
      }).pipe(Effect.scoped, Effect.provide(migrated(url)))
      const limited = url.replace(/\/\/[^@]*@/, `//${role}:limited-pw@`)

      // Another client holds the role's one connection until the first refusal has been waited on.
      const hog = yield* Scope.make()
      const hogSql = Context.get(yield* Layer.buildWithScope(clientLayer(limited), hog), SqlClient.SqlClient)
      yield* Scope.provide(hogSql.reserve, hog)
      const refusals = yield* Ref.make(0)
      const retry = Schedule.forever.pipe(Schedule.tap(() =>
        Effect.flatMap(Ref.updateAndGet(refusals, (n) => n + 1), (n) => n === 1 ? Scope.close(hog, Exit.void) : Effect.void)
      ))

      const history = yield* Effect.gen(function*() {
        const memory = yield* SqlMemory.make("alice", { retry })
        yield* memory.append([{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }])
        return (yield* memory.snapshot(10)).history
      }).pipe(Effect.scoped, Effect.provide(clientLayer(limited)))
      expect(yield* Ref.get(refusals)).toBeGreaterThanOrEqual(1)
      expect(history).toEqual([{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }])
    }), 60_000)
})
