/**
 * Shard lock refreshes taken together. Before it stores a reply, the
 * cluster engine confirms that this runner still holds the lock of the
 * message's shard: a refresh of that shard, two round trips (the runner's
 * heartbeat, then its advisory locks in pg_locks) on the runner's one lock
 * connection. The engine shares a refresh between replies of one shard only;
 * with many shards (300 by default) nearly every reply has its own, queued
 * behind the others on that connection, and the runner's turns wait there.
 *
 * Here the refreshes asked for while one runs wait together and then go as
 * one, for all their shards (the same two statements, whatever the number of
 * shards). Each caller still gets a refresh that started after it asked, so
 * the fence holds: a reply is stored only if its shard's lock was held after
 * the reply was made. Each gets back only its own shards that are still held.
 * The empty refresh (the engine's liveness probe, on the shared pool) goes
 * through as it is.
 */
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import type { ShardId } from "effect/cluster/ShardId"
import type { PersistenceError } from "effect/cluster/ClusterError"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"

/** The refreshes waiting for the one in flight: their shards, and where their answer goes. */
interface Waiting {
  readonly shards: Set<ShardId>
  readonly done: Deferred.Deferred<ReadonlyArray<ShardId>, PersistenceError>
}

export const coalesce = (
  storage: RunnerStorage.RunnerStorage["Service"]
): Effect.Effect<RunnerStorage.RunnerStorage["Service"], never, Scope.Scope> =>
  Effect.gen(function*() {
    // Runs the batches, outliving any one caller: an interrupted caller does not cancel the others' refresh.
    const scope = yield* Effect.scope
    // One refresh at a time per runner: they go over one connection anyway.
    const oneAtATime = yield* Semaphore.make(1)
    // The batch still taking callers, by runner address (this runner's, in practice).
    const waiting = new Map<string, Waiting>()

    const start = (key: string, address: Parameters<typeof storage.refresh>[0], batch: Waiting) =>
      oneAtATime.withPermit(Effect.suspend(() => {
        // From now on, a caller waits for the next batch: this one may have read the locks already.
        if (waiting.get(key) === batch) waiting.delete(key)
        return storage.refresh(address, [...batch.shards])
      })).pipe(
        // Interrupted too (the runner stopping): its callers are told, not left waiting.
        Effect.onExit((exit: Exit.Exit<ReadonlyArray<ShardId>, PersistenceError>) => Deferred.done(batch.done, exit)),
        Effect.forkIn(scope, { startImmediately: true })
      )

    const refresh: RunnerStorage.RunnerStorage["Service"]["refresh"] = (address, shardIds) => {
      const asked = Array.from(shardIds)
      if (asked.length === 0) return storage.refresh(address, asked)
      return Effect.gen(function*() {
        const key = address.toString()
        let batch = waiting.get(key)
        if (batch === undefined) {
          batch = { shards: new Set(), done: Deferred.makeUnsafe() }
          waiting.set(key, batch)
          for (const shard of asked) batch.shards.add(shard)
          yield* start(key, address, batch)
        } else {
          for (const shard of asked) batch.shards.add(shard)
        }
        const held = new Set(yield* Deferred.await(batch.done))
        return asked.filter((shard) => held.has(shard))
      })
    }

    return { ...storage, refresh }
  })

/** RunnerStorage from `inner`, with its refreshes taken together. */
export const layer = <E, R>(
  inner: Layer.Layer<RunnerStorage.RunnerStorage, E, R>
): Layer.Layer<RunnerStorage.RunnerStorage, E, R> =>
  Layer.effect(RunnerStorage.RunnerStorage, Effect.flatMap(RunnerStorage.RunnerStorage, coalesce)).pipe(
    Layer.provide(inner)
  )
