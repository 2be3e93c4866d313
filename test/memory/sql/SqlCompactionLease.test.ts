/**
 * The compaction lease across processes (SqlFoldStore over
 * SqlCompactionLocks), each "process" here a pool of its own with its own
 * compaction locks, against a throwaway server: a live holder keeps its
 * lease; a holder whose database session ended (a runner cut off, or dead)
 * is taken over at once, not after a time, and its own commit then changes
 * nothing.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Result, Fiber, Layer, Option, Schedule } from "effect"
import type { FoldStoreService } from "../../../src/memory/FoldStore.js"
import { CompactionBusy } from "../../../src/memory/MemoryDir.js"
import { type CompactionLocks, lockKeys } from "../../../src/memory/sql/SqlCompactionLocks.js"
import * as SqlFoldStore from "../../../src/memory/sql/SqlFoldStore.js"
import * as SqlMemory from "../../../src/memory/sql/SqlMemory.js"
import { usePostgres } from "../../support/Postgres.js"
import { freshDatabase, migrated } from "./SqlKit.js"

const server = usePostgres()

const lines = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? "user" as const : "assistant" as const, content: `m${i}` }))

/** Two processes' worth of pools and compaction locks on one fresh database, alice's memory holding 6 lines. */
const twoProcesses = Effect.gen(function*() {
  const url = yield* freshDatabase(yield* server)
  const first = yield* Layer.build(migrated(url))
  const second = yield* Layer.build(migrated(url))
  const foldStore = (context: Context.Context<SqlClient.SqlClient | CompactionLocks>) =>
    SqlFoldStore.make("alice", { retry: Schedule.recurs(1) }).pipe(Effect.provide(context))
  const memory = yield* SqlMemory.make("alice", { retry: Schedule.recurs(1) }).pipe(Effect.provide(first))
  yield* memory.append(lines(6))
  return { first, second, foldStore, sql: Context.get(first, SqlClient.SqlClient) }
})

/** Inside `store`'s compaction: plans, says so, waits for `goOn`, then commits `summary`. */
const compactHolding = (store: FoldStoreService, summary: string) =>
  Effect.gen(function*() {
    const planned = yield* Deferred.make<void>()
    const goOn = yield* Deferred.make<void>()
    const fiber = yield* Effect.forkChild(store.exclusiveCompaction(Effect.gen(function*() {
      const plan = yield* store.planFold(2)
      yield* Deferred.succeed(planned, undefined)
      yield* Deferred.await(goOn)
      return yield* store.commitFold(Option.getOrThrow(plan), summary)
    })))
    yield* Deferred.await(planned)
    return { fiber, goOn: Deferred.succeed(goOn, undefined) }
  })

/** A whole compaction keeping the last 2 lines, under the lease. */
const compactWhole = (store: FoldStoreService, summary: string) =>
  Effect.result(store.exclusiveCompaction(Effect.flatMap(store.planFold(2), (plan) => store.commitFold(Option.getOrThrow(plan), summary))))

const stateOf = (sql: SqlClient.SqlClient) =>
  Effect.all({
    summary: Effect.map(sql<{ summary: string | null }>`SELECT summary FROM planckclaw_agents WHERE agent_id = 'alice'`, (rows) => rows[0]?.summary),
    history: Effect.map(
      sql<{ content: string }>`SELECT content FROM planckclaw_history WHERE agent_id = 'alice' ORDER BY seq`,
      (rows) => rows.map((row) => row.content)
    ),
    lease: Effect.map(sql<{ by: string | null }>`SELECT compacting_by AS by FROM planckclaw_agents WHERE agent_id = 'alice'`, (rows) => rows[0]?.by)
  })

const busyPid = (outcome: Result.Result<unknown, unknown>) =>
  Result.isFailure(outcome) && outcome.failure instanceof CompactionBusy ? outcome.failure.ownerPid : undefined

describe("SQL memory: the compaction lease", () => {
  it.effect("a live holder's lease is not taken, by another process or by this one; given back, it is", () =>
    Effect.gen(function*() {
      const { first, second, foldStore, sql } = yield* twoProcesses
      const holder = yield* foldStore(first)
      const held = yield* compactHolding(holder, "the holder's summary")
      const lease = (yield* stateOf(sql)).lease
      expect(lease?.startsWith(`${process.pid} `)).toBe(true)
      // Another process, and another store of this process (an entity started again beside its old self).
      expect(busyPid(yield* compactWhole(yield* foldStore(second), "not mine"))).toBe(process.pid)
      expect(busyPid(yield* compactWhole(yield* foldStore(first), "not mine either"))).toBe(process.pid)
      expect((yield* stateOf(sql)).lease).toBe(lease)
      yield* held.goOn
      expect(Result.isSuccess(yield* Effect.result(Fiber.join(held.fiber)))).toBe(true)
      expect(yield* stateOf(sql)).toEqual({ summary: "the holder's summary\n", history: ["m4", "m5"], lease: null })
      // Given back: the other process takes it (nothing older than the kept tail is left to fold).
      expect(Option.isNone(yield* (yield* foldStore(second)).exclusiveCompaction((yield* foldStore(second)).planFold(2)))).toBe(true)
    }))

  it.effect("of two compactions of one process asking at once, one holds the lease and the other is told busy", () =>
    Effect.gen(function*() {
      const { first, foldStore } = yield* twoProcesses
      const entered = yield* Deferred.make<void>()
      const bothEntered = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      let inside = 0
      const compaction = (store: FoldStoreService) =>
        Effect.result(store.exclusiveCompaction(Effect.gen(function*() {
          inside++
          yield* Deferred.succeed(inside === 1 ? entered : bothEntered, undefined)
          yield* Deferred.await(gate)
        })))
      const fibers = yield* Effect.forEach([yield* foldStore(first), yield* foldStore(first)], (store) => Effect.forkChild(compaction(store)))
      yield* Deferred.await(entered)
      // Whichever comes first: the other told busy, or both let in.
      const firstDone = yield* Effect.raceFirst(
        Effect.as(Deferred.await(bothEntered), "both inside"),
        Effect.raceFirst(Fiber.join(fibers[0]!), Fiber.join(fibers[1]!)).pipe(Effect.map(busyPid))
      )
      expect(firstDone).toBe(process.pid)
      yield* Deferred.succeed(gate, undefined)
      const outcomes = yield* Effect.forEach(fibers, Fiber.join)
      expect(outcomes.filter(Result.isSuccess).length).toBe(1)
    }))

  it.effect("a lease with an end, as earlier versions wrote, is honoured until that end", () =>
    Effect.gen(function*() {
      const { second, foldStore, sql } = yield* twoProcesses
      yield* sql`UPDATE planckclaw_agents SET compacting_by = '4242 earlier', compacting_until = now() + interval '15 minutes'
        WHERE agent_id = 'alice'`
      const store = yield* foldStore(second)
      expect(busyPid(yield* compactWhole(store, "too early"))).toBe(4242)
      yield* sql`UPDATE planckclaw_agents SET compacting_until = now() - interval '1 second' WHERE agent_id = 'alice'`
      expect(Result.isSuccess(yield* compactWhole(store, "after its end"))).toBe(true)
      expect((yield* stateOf(sql)).summary).toBe("after its end\n")
    }))

  it.effect("a holder whose session ended is taken over at once, and its own commit then changes nothing", () =>
    Effect.gen(function*() {
      const { first, second, foldStore, sql } = yield* twoProcesses
      const cutOff = yield* compactHolding(yield* foldStore(first), "the cut-off holder's summary")
      // The server ends the holder's lock session, as it does for a runner cut off from it (or killed):
      // the holder itself runs on, folding.
      const [high, low] = lockKeys("alice")
      yield* sql`SELECT pg_terminate_backend(pid, 10000) FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = ${high >>> 0} AND objid = ${low >>> 0}`
      yield* sql`INSERT INTO planckclaw_history (agent_id, seq, role, content) VALUES ('alice', 100, 'user', 'm6'), ('alice', 101, 'assistant', 'm7')`
      // Another process compacts now, without waiting for any time to pass.
      const takeover = yield* compactWhole(yield* foldStore(second), "the new holder's summary")
      expect(Result.isSuccess(takeover) ? "compacted" : takeover.failure).toBe("compacted")
      const taken = yield* stateOf(sql)
      expect(taken).toEqual({ summary: "the new holder's summary\n", history: ["m6", "m7"], lease: null })
      // The cut-off holder comes back with its older plan: refused, nothing it folded overwrites the new summary.
      yield* cutOff.goOn
      const stale = yield* Effect.result(Fiber.join(cutOff.fiber))
      expect(Result.isFailure(stale) && stale.failure._tag === "MemoryError" && stale.failure.reason).toBe("locked")
      expect(JSON.stringify(stale)).toContain("taken over by another process")
      expect(yield* stateOf(sql)).toEqual(taken)
    }))
})
