/**
 * The cluster's AgentHost in process over a fresh throwaway PostgreSQL, its
 * messages in the `cluster_` tables as a runner keeps them, with a brain
 * that answers `reply to TEXT`, holds a text starting "hold" until the
 * test's gate opens, and fails the next `failing.count` calls: for the tests
 * of what a key holds while a turn is under way (TakenMessages,
 * AcceptedRetries).
 */
import * as SqlClient from "effect/sql/SqlClient"
import { Deferred, Effect, type Layer } from "effect"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import { BrainError, type BrainService } from "../../../src/ports/Brain.js"
import { freshDatabase, migrated } from "../../memory/sql/SqlKit.js"
import type { PostgresServer } from "../../support/Postgres.js"
import { host } from "./EntityOverPostgres.js"

export const heldBrain = (gate: Deferred.Deferred<void>) => {
  const asked: Array<string> = []
  const failing = { count: 0 }
  const brain: BrainService = {
    complete: (request) =>
      Effect.suspend(() => {
        const last = request.messages[request.messages.length - 1]!
        const text = typeof last.content === "string" ? last.content : ""
        asked.push(text)
        if (failing.count > 0) {
          failing.count--
          return Effect.fail(new BrainError({ reason: "timeout", detail: "the test's outage" }))
        }
        const answer = Effect.succeed(ScriptedBrain.text(`reply to ${text}`))
        return text.startsWith("hold") ? Effect.andThen(Deferred.await(gate), answer) : answer
      })
  }
  return { brain, asked, failing }
}

/** The cluster's message rows under agent `id`'s keys: key and whether answered. */
export const stored = (sql: SqlClient.SqlClient, id: string) =>
  Effect.map(
    sql<{ message_id: string; processed: boolean }>`SELECT message_id, processed FROM cluster_messages
      WHERE entity_id = ${id} AND kind = 0 ORDER BY id`,
    (rows) => rows.map((row) => ({ key: row.message_id.slice(`Agent/${id}/Send/`.length), answered: row.processed }))
  )

export type HeldKit = ReturnType<typeof heldBrain> & { readonly gate: Deferred.Deferred<void>; readonly sql: SqlClient.SqlClient }

/** Runs `test` with the host over a fresh database of `server`, its brain held at a gate opened when the test ends. */
export const withHeldHost = <A, E>(
  server: Effect.Effect<PostgresServer>,
  test: (kit: HeldKit) => Effect.Effect<A, E, Layer.Success<ReturnType<typeof host>> | SqlClient.SqlClient>
) =>
  Effect.gen(function*() {
    const url = yield* Effect.flatMap(server, freshDatabase)
    yield* Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const gate = yield* Deferred.make<void>()
      const kit = heldBrain(gate)
      yield* Effect.addFinalizer(() => Deferred.succeed(gate, undefined))
      yield* test({ ...kit, gate, sql }).pipe(Effect.provide(host(sql, kit.brain, { messages: "postgres" })))
    }).pipe(Effect.provide(migrated(url)), Effect.scoped)
  })
