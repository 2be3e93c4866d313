/**
 * Retention of the cluster's rows on a real PostgreSQL, with the Clock a
 * TestClock: answered messages (with their replies and acks), decided turns
 * and the cluster's exchange keys older than the retention go; an
 * unanswered message of any age stays with its turn and exchange key, and
 * so does everything younger, and memory's own inbox keys. The pruning
 * fiber passes once at start and again each interval of the Clock.
 */
import * as MachineId from "effect/cluster/MachineId"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Snowflake from "effect/cluster/Snowflake"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as Pruning from "../../../src/hosts/cluster/Pruning.js"
import * as TurnJournal from "../../../src/hosts/cluster/TurnJournal.js"
import { usePostgres } from "../../support/Postgres.js"
import { advanceTo, awaitPendingSleep } from "../../support/TestClockWait.js"
import { freshDatabase, migrated } from "../../memory/sql/SqlKit.js"

const server = usePostgres()

const HOUR = 3600_000
const DAY = 24 * HOUR
const NOW = Date.UTC(2026, 10, 30, 12)

let sequence = 0
const snowflake = (at: number) => String(Snowflake.make({ timestamp: at, machineId: MachineId.make(7), sequence: sequence++ }))

/** A request to agent alice under `key`, sent at `at`; answered (a final reply and an ack) unless `pending`. */
const request = (key: string, at: number, pending = false) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const id = snowflake(at)
    const reply = snowflake(at + 10)
    yield* sql`INSERT INTO cluster_messages (id, message_id, shard_id, entity_type, entity_id, kind, tag, payload, processed, request_id, last_reply_id)
      VALUES (CAST(${id} AS BIGINT), ${`Agent/alice/Send/${key}`}, 'default:1', 'Agent', 'alice', 0, 'Send', '{}', ${!pending},
        CAST(${id} AS BIGINT), ${pending ? null : sql`CAST(${reply} AS BIGINT)`})`
    if (!pending) {
      yield* sql`INSERT INTO cluster_replies (id, kind, request_id, payload) VALUES (CAST(${reply} AS BIGINT), 0, CAST(${id} AS BIGINT), '{}')`
      yield* sql`INSERT INTO cluster_messages (id, shard_id, entity_type, entity_id, kind, processed, request_id, reply_id)
        VALUES (CAST(${snowflake(at + 20)} AS BIGINT), 'default:1', 'Agent', 'alice', 1, TRUE, CAST(${id} AS BIGINT), CAST(${reply} AS BIGINT))`
    }
    yield* sql`INSERT INTO planckclaw_cluster_turns (agent_id, message_key, reply, stored, decided_at)
      VALUES ('alice', ${key}, 'decided', TRUE, ${new Date(at)})`
    yield* sql`INSERT INTO planckclaw_exchanges (agent_id, key, stored) VALUES ('alice', ${key}, ${new Date(at)})`
  })

const remaining = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const keys = (rows: ReadonlyArray<{ key: string }>) => rows.map((row) => row.key).sort()
  return {
    messages: keys(yield* sql<{ key: string }>`SELECT split_part(message_id, '/', 4) AS key FROM cluster_messages WHERE kind = 0`),
    notes: Number((yield* sql<{ n: bigint }>`SELECT count(*) AS n FROM cluster_messages WHERE kind <> 0`)[0]!.n),
    replies: Number((yield* sql<{ n: bigint }>`SELECT count(*) AS n FROM cluster_replies`)[0]!.n),
    turns: keys(yield* sql<{ key: string }>`SELECT message_key AS key FROM planckclaw_cluster_turns`),
    exchanges: keys(yield* sql<{ key: string }>`SELECT key FROM planckclaw_exchanges`)
  }
})

/**
 * The database's state once a pass is over: the fiber has gone to sleep until
 * `next` (TestClock millis). Its last batch finds nothing, then it logs, then
 * sleeps, all on real I/O: a pass's deletions are visible before its sleep
 * exists, and a clock moved in between would leave that sleep behind.
 */
const afterPass = (next: number) => Effect.andThen(awaitPendingSleep(next), remaining)

const tables = Layer.mergeAll(
  SqlMessageStorage.layer.pipe(Layer.provide([ShardingConfig.layer(), NodeCrypto.layerDigest])),
  TurnJournal.layer
)

describe("pruning the cluster's rows", () => {
  it.effect("deletes finished work older than the retention, once at start and again as the clock moves", () =>
    Effect.gen(function*() {
      const url = yield* Effect.flatMap(server, freshDatabase)
      yield* Effect.gen(function*() {
        yield* TestClock.setTime(NOW)
        yield* request("idem:old-done", NOW - 3 * DAY)
        yield* request("msg:old-pending", NOW - 3 * DAY, true)
        yield* request("idem:aging-done", NOW - 23.5 * HOUR)
        yield* request("idem:recent-done", NOW - HOUR)
        // Memory's own inbox keys (not the cluster's) are not pruned here, however old.
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO planckclaw_exchanges (agent_id, key, stored) VALUES ('bob', 'inbox-key', ${new Date(NOW - 9 * DAY)})`

        yield* Layer.launch(Pruning.layer({ retentionSeconds: 86_400, batch: 1 })).pipe(Effect.forkScoped)
        const first = yield* afterPass(NOW + HOUR)
        expect(first).toEqual({
          messages: ["idem:aging-done", "idem:recent-done", "msg:old-pending"],
          notes: 2,
          replies: 2,
          turns: ["idem:aging-done", "idem:recent-done", "msg:old-pending"],
          exchanges: ["idem:aging-done", "idem:recent-done", "inbox-key", "msg:old-pending"]
        })

        // An hour on (the interval for a day's retention), the next pass: the aging message is past it now.
        yield* advanceTo(NOW + HOUR)
        const second = yield* afterPass(NOW + 2 * HOUR)
        expect(second).toEqual({
          messages: ["idem:recent-done", "msg:old-pending"],
          notes: 1,
          replies: 1,
          turns: ["idem:recent-done", "msg:old-pending"],
          exchanges: ["idem:recent-done", "inbox-key", "msg:old-pending"]
        })
      }).pipe(Effect.scoped, Effect.provide(Layer.provideMerge(tables, migrated(url))))
    }), 60_000)

  it.effect("one pass reports what it deleted; nothing when nothing is old", () =>
    Effect.gen(function*() {
      const url = yield* Effect.flatMap(server, freshDatabase)
      yield* Effect.gen(function*() {
        yield* TestClock.setTime(NOW)
        yield* request("idem:a", NOW - 2 * DAY)
        yield* request("idem:b", NOW - 2 * DAY)
        expect(yield* Pruning.pruneOnce({ retentionSeconds: 3 * 86_400 })).toEqual({ messages: 0, turns: 0, exchanges: 0 })
        expect(yield* Pruning.pruneOnce({ retentionSeconds: 86_400, batch: 1 })).toEqual({ messages: 2, turns: 2, exchanges: 2 })
      }).pipe(Effect.provide(Layer.provideMerge(tables, migrated(url))))
    }), 60_000)
})
