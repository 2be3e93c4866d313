/**
 * Retention of the cluster's rows on a real PostgreSQL, with the Clock a
 * TestClock: answered messages (with their replies and acks), decided turns
 * and the cluster's exchange keys older than the retention go, a message
 * always with its turn and key, and only once all three are old (a turn
 * decided long after its message was accepted keeps the message); an
 * unanswered message of any age stays with its turn and exchange key (also
 * one the engine stores under its key's digest), and so does everything
 * younger, and memory's own inbox keys. A turn or key whose message is gone
 * goes once old. The pruning fiber passes once at start and again each
 * interval of the Clock. Last, messages as a runner stores them.
 */
import * as crypto from "node:crypto"
import * as MachineId from "effect/cluster/MachineId"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Snowflake from "effect/cluster/Snowflake"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import * as Pruning from "../../../src/hosts/cluster/Pruning.js"
import type { BrainService } from "../../../src/ports/Brain.js"
import * as TurnJournal from "../../../src/hosts/cluster/TurnJournal.js"
import { usePostgres } from "../../support/Postgres.js"
import { advanceTo, awaitPendingSleep } from "../../support/TestClockWait.js"
import { freshDatabase, migrated } from "../../memory/sql/SqlKit.js"
import { entity, send } from "./EntityOverPostgres.js"

const server = usePostgres()

const brain: BrainService = { complete: () => Effect.succeed(ScriptedBrain.text("a reply")) }

const HOUR = 3600_000
const DAY = 24 * HOUR
const NOW = Date.UTC(2026, 10, 30, 12)

let sequence = 0
const snowflake = (at: number) => String(Snowflake.make({ timestamp: at, machineId: MachineId.make(7), sequence: sequence++ }))

/** The message_id the engine gives alice's message `key`: its primary key, or that key's SHA-256 in hex past 255 characters. */
const messageIdOf = (key: string) => {
  const primaryKey = `Agent/alice/Send/${key}`
  return primaryKey.length <= 255 ? primaryKey : crypto.createHash("sha256").update(primaryKey).digest("hex")
}

interface Sent {
  /** Not answered yet. */
  readonly pending?: boolean
  /** When its turn was decided (default: when it was sent). */
  readonly decided?: number
  /** When its exchange was stored (default: when its turn was decided). */
  readonly stored?: number
}

/** A request to agent alice under `key`, sent at `at`, as the engine stores it; answered (a final reply and an ack) unless `pending`. */
const request = (key: string, at: number, sent: Sent = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const id = snowflake(at)
    const reply = snowflake(at + 10)
    const pending = sent.pending === true
    const payload = JSON.stringify({ text: "hello", channel: "http", key, idempotencyKey: key.slice("idem:".length) })
    yield* sql`INSERT INTO cluster_messages (id, message_id, shard_id, entity_type, entity_id, kind, tag, payload, processed, request_id, last_reply_id)
      VALUES (CAST(${id} AS BIGINT), ${messageIdOf(key)}, 'default:1', 'Agent', 'alice', 0, 'Send', ${payload}, ${!pending},
        CAST(${id} AS BIGINT), ${pending ? null : sql`CAST(${reply} AS BIGINT)`})`
    if (!pending) {
      yield* sql`INSERT INTO cluster_replies (id, kind, request_id, payload) VALUES (CAST(${reply} AS BIGINT), 0, CAST(${id} AS BIGINT), '{}')`
      yield* sql`INSERT INTO cluster_messages (id, shard_id, entity_type, entity_id, kind, processed, request_id, reply_id)
        VALUES (CAST(${snowflake(at + 20)} AS BIGINT), 'default:1', 'Agent', 'alice', 1, TRUE, CAST(${id} AS BIGINT), CAST(${reply} AS BIGINT))`
    }
    yield* turnAndKey(key, sent.decided ?? at, sent.stored ?? sent.decided ?? at)
  })

/** The decided turn and the exchange key of alice's message `key`. */
const turnAndKey = (key: string, decided: number, stored: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO planckclaw_cluster_turns (agent_id, message_key, reply, stored, decided_at)
      VALUES ('alice', ${key}, 'decided', TRUE, ${new Date(decided)})`
    yield* sql`INSERT INTO planckclaw_exchanges (agent_id, key, stored) VALUES ('alice', ${key}, ${new Date(stored)})`
  })

const remaining = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const keys = (rows: ReadonlyArray<{ key: string }>) => rows.map((row) => row.key).sort()
  return {
    messages: keys(yield* sql<{ key: string }>`SELECT payload::json ->> 'key' AS key FROM cluster_messages WHERE kind = 0`),
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
        yield* request("msg:old-pending", NOW - 3 * DAY, { pending: true })
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
  it.effect("keeps a message with its turn and exchange key until all three are old, then deletes them together", () =>
    Effect.gen(function*() {
      const url = yield* Effect.flatMap(server, freshDatabase)
      yield* Effect.gen(function*() {
        yield* TestClock.setTime(NOW)
        yield* request("idem:done", NOW - 3 * DAY)
        // Accepted three days ago, its turn decided an hour ago (a slow brain, a queue): a day's retention falls between.
        yield* request("idem:slow", NOW - 3 * DAY, { decided: NOW - HOUR })
        // Decided three days ago, its exchange stored an hour ago (it waited for memory, then went with a later turn).
        yield* request("idem:stored-late", NOW - 3 * DAY, { stored: NOW - HOUR })
        expect(yield* Pruning.pruneOnce({ retentionSeconds: 86_400, batch: 1 })).toEqual({ messages: 1, turns: 1, exchanges: 1 })
        expect(yield* remaining).toEqual({
          messages: ["idem:slow", "idem:stored-late"],
          notes: 2,
          replies: 2,
          turns: ["idem:slow", "idem:stored-late"],
          exchanges: ["idem:slow", "idem:stored-late"]
        })
        yield* TestClock.setTime(NOW + DAY)
        expect(yield* Pruning.pruneOnce({ retentionSeconds: 86_400, batch: 1 })).toEqual({ messages: 2, turns: 2, exchanges: 2 })
        expect(yield* remaining).toEqual({ messages: [], notes: 0, replies: 0, turns: [], exchanges: [] })
      }).pipe(Effect.provide(Layer.provideMerge(tables, migrated(url))))
    }), 60_000)

  it.effect("knows a message the engine stores under its key's digest (past 255 characters): unanswered, its turn and key stay", () =>
    Effect.gen(function*() {
      const url = yield* Effect.flatMap(server, freshDatabase)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* TestClock.setTime(NOW)
        // A quote and a backslash too, which its payload's JSON escapes.
        const long = `idem:${"k".repeat(245)}"\\`
        yield* request(long, NOW - 3 * DAY, { pending: true })
        expect(yield* Pruning.pruneOnce({ retentionSeconds: 86_400 })).toEqual({ messages: 0, turns: 0, exchanges: 0 })
        expect((yield* remaining).turns).toEqual([long])
        // Answered now: all three go together.
        yield* sql`UPDATE cluster_messages SET processed = TRUE, last_reply_id = id WHERE kind = 0`
        expect(yield* Pruning.pruneOnce({ retentionSeconds: 86_400 })).toEqual({ messages: 1, turns: 1, exchanges: 1 })
      }).pipe(Effect.provide(Layer.provideMerge(tables, migrated(url))))
    }), 60_000)

  it.effect("deletes a turn and key whose message is gone (an earlier version pruned it) once old, not before", () =>
    Effect.gen(function*() {
      const url = yield* Effect.flatMap(server, freshDatabase)
      yield* Effect.gen(function*() {
        yield* TestClock.setTime(NOW)
        yield* turnAndKey("idem:orphan-old", NOW - 3 * DAY, NOW - 3 * DAY)
        yield* turnAndKey("idem:orphan-young", NOW - HOUR, NOW - HOUR)
        // A key alone (its reply not recorded): the same.
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO planckclaw_exchanges (agent_id, key, stored) VALUES ('alice', 'msg:key-alone', ${new Date(NOW - 3 * DAY)})`
        expect(yield* Pruning.pruneOnce({ retentionSeconds: 86_400, batch: 1 })).toEqual({ messages: 0, turns: 1, exchanges: 2 })
        expect(yield* remaining).toMatchObject({ turns: ["idem:orphan-young"], exchanges: ["idem:orphan-young"] })
      }).pipe(Effect.provide(Layer.provideMerge(tables, migrated(url))))
    }), 60_000)

  it.live("finds a message's key as a runner stores it, under a digest too, a NUL in its text too", () =>
    Effect.gen(function*() {
      const url = yield* Effect.flatMap(server, freshDatabase)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // The longest agent id: with a 200-character key, the engine stores the message under its key's digest.
        const agent = `a${"b".repeat(63)}`
        yield* Effect.gen(function*() {
          expect(yield* send(agent, "hello\u0000there", "short")).toMatchObject({ stored: true })
          expect(yield* send(agent, "hello\u0000again", "k".repeat(200))).toMatchObject({ stored: true })
        }).pipe(Effect.provide(entity(sql, brain, { messages: "postgres" })))
        const digests = yield* sql<{ n: bigint }>`SELECT count(*) AS n FROM cluster_messages WHERE kind = 0 AND position('/' IN message_id) = 0`
        expect(Number(digests[0]!.n)).toBe(1)
        // Their turns ended after the cutoff of a retention of zero: the messages stay, with their turns and keys.
        yield* sql`UPDATE planckclaw_cluster_turns SET decided_at = now() + interval '1 hour'`
        expect(yield* Pruning.pruneOnce({ retentionSeconds: 0 })).toEqual({ messages: 0, turns: 0, exchanges: 0 })
        yield* sql`UPDATE planckclaw_cluster_turns SET decided_at = now() - interval '1 hour'`
        expect(yield* Pruning.pruneOnce({ retentionSeconds: 0 })).toEqual({ messages: 2, turns: 2, exchanges: 2 })
      }).pipe(Effect.provide(migrated(url)))
    }), 60_000)
})
