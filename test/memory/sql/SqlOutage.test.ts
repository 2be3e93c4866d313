import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, Ref, Schedule } from "effect"
import * as SqlInbox from "../../../src/memory/sql/SqlInbox.js"
import * as SqlMemory from "../../../src/memory/sql/SqlMemory.js"
import { usePostgres } from "../../support/Postgres.js"
import { eventually } from "../../support/Sandbox.js"
import { freshDatabase, migrated } from "./SqlKit.js"

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
})
