/**
 * A stop (SIGTERM interrupts serve's main fiber) closes every started
 * agent, not only the first: each lets its run lock go and runs what its
 * close owes (the inbox journal's last write, the keys not yet recorded).
 * The first agent's close waited on its compaction interruptibly, and the
 * interruption it took there ended the closing of all the others.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { echoBrain, startHost, tempDir } from "./Kit.js"

describe("AgentHost: a stop", () => {
  it.live("closes every started agent when the host's fiber is interrupted", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const ids = ["first", "second", "third"]
      const ready = yield* Deferred.make<void>()
      const host = yield* Effect.forkChild(Effect.scoped(Effect.gen(function*() {
        const agents = yield* startHost(root, echoBrain().layer)
        for (const id of ids) yield* agents.send(id, { text: "hi" })
        yield* Deferred.succeed(ready, undefined)
        return yield* Effect.never
      })))
      yield* Deferred.await(ready)
      const lock = (id: string) => path.join(root, "agents", id, ".planckclaw-run.lock")
      expect(ids.filter((id) => fs.existsSync(lock(id)))).toEqual(ids)
      yield* Fiber.interrupt(host)
      // Each agent's close let its lock go.
      expect(ids.filter((id) => fs.existsSync(lock(id)))).toEqual([])
    }))
})
