/**
 * Shard lock refreshes taken together (ShardLockRefresh.coalesce), over a
 * RunnerStorage whose refreshes answer when the test lets them: those asked
 * while one runs go as one, for all their shards; each caller gets its own
 * shards still held, from a refresh that started after it asked.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import type * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as ShardId from "effect/cluster/ShardId"
import { PersistenceError } from "effect/cluster/ClusterError"
import * as ShardLockRefresh from "../../../src/hosts/cluster/ShardLockRefresh.js"

const self = RunnerAddress.make("127.0.0.1", 34431)
const shard = (id: number) => ShardId.make("default", id)

/** A storage whose every refresh is recorded and waits for the test to answer it (holding every shard but 4). */
const controlled = Effect.gen(function*() {
  const calls: Array<{ readonly shards: ReadonlyArray<number>; readonly answer: Deferred.Deferred<void, PersistenceError> }> = []
  const refresh: RunnerStorage.RunnerStorage["Service"]["refresh"] = (_address, shardIds) =>
    Effect.suspend(() => {
      const shards = Array.from(shardIds)
      const answer = Deferred.makeUnsafe<void, PersistenceError>()
      calls.push({ shards: shards.map((id) => id.id), answer })
      return Effect.as(Deferred.await(answer), shards.filter((id) => id.id !== 4))
    })
  const storage = { refresh } as RunnerStorage.RunnerStorage["Service"]
  return { calls, storage: yield* ShardLockRefresh.coalesce(storage) }
})

describe("ShardLockRefresh.coalesce", () => {
  it.effect("refreshes asked while one runs go as one, each answered with its own shards", () =>
    Effect.scoped(Effect.gen(function*() {
      const { calls, storage } = yield* controlled
      const first = yield* Effect.forkChild(storage.refresh(self, [shard(1)]), { startImmediately: true })
      expect(calls.map((call) => call.shards)).toEqual([[1]])
      // Asked while the first is in flight: they wait, together.
      const second = yield* Effect.forkChild(storage.refresh(self, [shard(2), shard(4)]), { startImmediately: true })
      const third = yield* Effect.forkChild(storage.refresh(self, [shard(3), shard(2)]), { startImmediately: true })
      yield* Effect.yieldNow
      expect(calls).toHaveLength(1)
      yield* Deferred.succeed(calls[0]!.answer, undefined)
      expect((yield* Fiber.join(first)).map((id) => id.id)).toEqual([1])
      yield* Effect.yieldNow
      // One refresh for the two waiting, with the shards of both.
      expect(calls.map((call) => [...call.shards].sort())).toEqual([[1], [2, 3, 4]])
      yield* Deferred.succeed(calls[1]!.answer, undefined)
      // Each gets its own shards still held (4 is lost), not the others'.
      expect((yield* Fiber.join(second)).map((id) => id.id)).toEqual([2])
      expect((yield* Fiber.join(third)).map((id) => id.id)).toEqual([3, 2])
    })))

  it.effect("a refresh asked once the batch has started waits for the next: it never takes an answer read before it asked", () =>
    Effect.scoped(Effect.gen(function*() {
      const { calls, storage } = yield* controlled
      const first = yield* Effect.forkChild(storage.refresh(self, [shard(1)]), { startImmediately: true })
      const second = yield* Effect.forkChild(storage.refresh(self, [shard(1)]), { startImmediately: true })
      yield* Deferred.succeed(calls[0]!.answer, undefined)
      yield* Fiber.join(first)
      yield* Effect.yieldNow
      expect(calls).toHaveLength(2)
      expect(second.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(calls[1]!.answer, undefined)
      expect((yield* Fiber.join(second)).map((id) => id.id)).toEqual([1])
    })))

  it.effect("a failed refresh fails every caller of its batch; the empty one (the liveness probe) goes through alone", () =>
    Effect.scoped(Effect.gen(function*() {
      const { calls, storage } = yield* controlled
      const first = yield* Effect.forkChild(storage.refresh(self, [shard(1)]), { startImmediately: true })
      const second = yield* Effect.forkChild(storage.refresh(self, [shard(2)]), { startImmediately: true })
      const third = yield* Effect.forkChild(storage.refresh(self, [shard(3)]), { startImmediately: true })
      const probe = yield* Effect.forkChild(storage.refresh(self, []), { startImmediately: true })
      expect(calls.map((call) => call.shards)).toEqual([[1], []])
      yield* Deferred.succeed(calls[1]!.answer, undefined)
      expect(yield* Fiber.join(probe)).toEqual([])
      yield* Deferred.succeed(calls[0]!.answer, undefined)
      yield* Fiber.join(first)
      yield* Effect.yieldNow
      yield* Deferred.fail(calls[2]!.answer, new PersistenceError({ cause: "the database went away" }))
      expect((yield* Effect.flip(Fiber.join(second)))._tag).toBe("PersistenceError")
      expect((yield* Effect.flip(Fiber.join(third)))._tag).toBe("PersistenceError")
    })))
})
