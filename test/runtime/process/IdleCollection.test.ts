/**
 * Released agents' memory given back when serve is quiet: a collection only
 * after a release and a whole interval without a message (TestClock); the
 * host's own counts of accepted messages and released agents driving it;
 * and on this Node's real V8, the collection giving back a dropped heap.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as IdleCollection from "../../../src/runtime/process/IdleCollection.js"
import { echoBrain, startHost, tempDir } from "../../hosts/serve/Kit.js"

/** Lets every forked fiber run as far as it can without time passing. */
const settle = Effect.gen(function*() {
  for (let round = 0; round < 10; round++) yield* Effect.yieldNow
})

describe("IdleCollection", () => {
  it.effect("collects once after agents were released and a whole interval passed without a message; never while messages come", () =>
    Effect.gen(function*() {
      const activity = { accepted: 0, released: 0 }
      let collections = 0
      const fiber = yield* Effect.forkChild(IdleCollection.whenQuiet(() => ({ ...activity }), "10 seconds", Effect.sync(() => void collections++)))
      yield* settle
      yield* TestClock.adjust("30 seconds")
      expect(collections).toBe(0) // nothing released yet

      activity.accepted += 3
      activity.released += 2
      yield* TestClock.adjust("10 seconds")
      expect(collections).toBe(0) // released, but messages came in that interval
      yield* TestClock.adjust("10 seconds")
      expect(collections).toBe(1)
      yield* TestClock.adjust("60 seconds")
      expect(collections).toBe(1) // once per release, not every interval

      activity.released += 1
      for (let n = 0; n < 5; n++) {
        activity.accepted++
        yield* TestClock.adjust("10 seconds")
      }
      expect(collections).toBe(1) // a message every interval: V8 collects a busy process on its own
      yield* TestClock.adjust("10 seconds")
      expect(collections).toBe(2)
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("runs on the host's own counts: agents released at PLANCKCLAW_AGENT_IDLE, then a quiet interval, then one collection", () =>
    Effect.gen(function*() {
      const agents = yield* startHost(tempDir(), echoBrain().layer, { PLANCKCLAW_AGENT_IDLE: "60" })
      expect(agents.activity).toBeDefined()
      const activity = agents.activity!
      let collections = 0
      yield* Effect.forkChild(IdleCollection.whenQuiet(activity, "10 seconds", Effect.sync(() => void collections++)))
      yield* settle
      yield* Effect.forEach(["a", "b", "c"], (id) => agents.send(id, { text: "hi" }), { concurrency: "unbounded" })
      expect(activity()).toEqual({ accepted: 3, released: 0 })
      yield* TestClock.adjust("50 seconds")
      expect(collections).toBe(0)
      yield* TestClock.adjust("20 seconds")
      yield* settle
      expect(activity().released).toBe(3)
      yield* TestClock.adjust("20 seconds")
      expect(collections).toBe(1)
    }).pipe(Effect.scoped))

  it("gives back a heap the program dropped, and its pages to the system, on this Node's V8", () => {
    const module = path.resolve("dist/runtime/process/IdleCollection.js")
    const script = `
      const IdleCollection = await import(${JSON.stringify(module)})
      const { Effect } = await import("effect")
      const base = process.memoryUsage.rss()
      let kept = Array.from({ length: 800000 }, (_, n) => ({ n, text: "x".repeat(50) + n, list: [n] }))
      const peak = process.memoryUsage.rss()
      const before = process.memoryUsage().heapUsed
      kept = undefined
      await Effect.runPromise(IdleCollection.majorCollection)
      // V8 unmaps the pages it gives back from a background thread: read
      // the resident figure until it is down, for 5 s at most.
      for (let waited = 0; waited < 5000 && process.memoryUsage.rss() - base >= (peak - base) / 2; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      console.log(JSON.stringify({ before, after: process.memoryUsage().heapUsed, base, peak, rss: process.memoryUsage.rss() }))`
    const ran = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", cwd: path.resolve(".") })
    expect(ran.stderr).toBe("")
    const { after, base, before, peak, rss } = JSON.parse(ran.stdout) as Record<"after" | "base" | "before" | "peak" | "rss", number>
    // 800,000 objects and strings: over a hundred MiB, all unreachable once dropped.
    expect(before - after).toBeGreaterThan(60 * 1024 * 1024)
    // Most of what the process grew by is resident no more: a regular major
    // collection (not the memory-reducing flavour) kept nearly all of it.
    expect(peak - base).toBeGreaterThan(100 * 1024 * 1024)
    expect(rss - base).toBeLessThan((peak - base) / 2)
  })
})
