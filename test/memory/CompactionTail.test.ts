/**
 * The end of a background compaction: its commit ends on an fsync of the
 * directory, whose callback can come while a turn waits on a pipe. What
 * follows (the log line, the compaction lock's release) waits for that turn
 * to end, like every other step of the compaction, instead of running in
 * the middle of it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { captureLogs } from "../support/LogCapture.js"
import { tempDir } from "../support/Sandbox.js"
import { yieldToEventLoop } from "../support/TestClockWait.js"
import { compactorOver, history } from "./CompactorKit.js"

// The lock is a link (to the pid, or to the run's lock), which existsSync would follow.
const present = (file: string) => fs.lstatSync(file, { throwIfNoEntry: false }) !== undefined

describe("a background compaction's end", () => {
  it.effect("after the commit, the log line and the compaction lock's release wait for the turn in flight", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      fs.writeFileSync(path.join(directory, "history.jsonl"), history(6))
      const lock = path.join(directory, ".planckclaw-compact.lock")
      const memory = yield* Memory.make(directory)
      const folds = FoldStore.make(memory.memoryDir)
      // The commit is held once done, as a slow fsync of the directory holds it, until the test lets it end.
      const committed = yield* Deferred.make<void>()
      const fsyncDone = yield* Deferred.make<void>()
      const slowEnd: FoldStore.FoldStoreService = {
        ...folds,
        commitFold: (plan, summary, between) =>
          Effect.tap(folds.commitFold(plan, summary, between), () =>
            Effect.andThen(Deferred.succeed(committed, undefined), Deferred.await(fsyncDone)))
      }
      const logs = yield* captureLogs
      const compactor = yield* compactorOver(memory, slowEnd, ["the summary"])

      yield* compactor.startIfNeeded.pipe(Effect.provide(logs.layer))
      yield* Deferred.await(committed)
      expect(fs.readFileSync(path.join(directory, "summary.md"), "utf8")).toBe("the summary\n")
      // A turn begins while the commit's last fsync is under way, and waits on its pipe.
      const turnRelease = yield* Deferred.make<void>()
      const turnIn = yield* Deferred.make<void>()
      const turn = yield* Effect.forkChild(compactor.turn(Effect.andThen(Deferred.succeed(turnIn, undefined), Deferred.await(turnRelease))))
      yield* Deferred.await(turnIn)
      yield* Deferred.succeed(fsyncDone, undefined)
      // Many passes of the event loop, each enough for a step: none is taken while the turn is in flight.
      for (let pass = 0; pass < 50; pass++) yield* yieldToEventLoop
      expect(present(lock)).toBe(true)
      expect(logs.lines.filter((entry) => entry.includes("compaction: summarised"))).toEqual([])

      yield* Deferred.succeed(turnRelease, undefined)
      yield* Fiber.join(turn)
      yield* compactor.settled
      expect(present(lock)).toBe(false)
      expect(logs.lines).toContain("INFO compaction: summarised 4 lines, kept 2, summary 12 bytes")
    }))
})
