/**
 * serve makes one compactor per agent started: what it builds up front is
 * held by every running agent. The compaction pipeline is built when a
 * compaction runs, not when the compactor is made (an eager one held ~9 KB
 * of heap per agent, measured with 10,000 agents: bench/serve.mjs).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { tempDir } from "../support/Sandbox.js"
import { compactorOver, history } from "../memory/CompactorKit.js"

describe("Compactor.make", () => {
  it.effect("builds no compaction until one runs; a due one and a forced one still compact", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      fs.writeFileSync(path.join(directory, "history.jsonl"), history(6))
      const memory = yield* Memory.make(directory)
      const folds = FoldStore.make(memory.memoryDir)
      let built = 0
      const counted: FoldStore.FoldStoreService = {
        ...folds,
        exclusiveCompaction: (effect) => {
          built++
          return folds.exclusiveCompaction(effect)
        }
      }
      const compactor = yield* compactorOver(memory, counted, ["first summary", "second summary"])
      expect(built).toBe(0)

      yield* compactor.startIfNeeded
      yield* compactor.settled
      expect(built).toBe(1)
      expect(fs.readFileSync(path.join(directory, "summary.md"), "utf8")).toBe("first summary\n")

      fs.appendFileSync(path.join(directory, "history.jsonl"), history(2))
      const forced = yield* compactor.compactNow
      expect(built).toBe(2)
      expect(Option.map(forced, (report) => report.kept)).toEqual(Option.some(2))
      expect(fs.readFileSync(path.join(directory, "summary.md"), "utf8")).toBe("second summary\n")
    }))
})
