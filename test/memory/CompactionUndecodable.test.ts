/**
 * A line of history.jsonl older than the kept tail that does not decode (a
 * hand edit that broke its JSON) is dropped by the compaction that folds it:
 * the turns never read it (they read the tail), so this is the only moment
 * the loss can be said, and it is said in the log, not only to `/compact`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { captureLogs } from "../support/LogCapture.js"
import { tempDir } from "../support/Sandbox.js"
import { compactorOver, history } from "./CompactorKit.js"

describe("a compaction that folds undecodable lines", () => {
  it.effect("warns in the log how many lines it dropped; a clean fold gives no such warning", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const historyPath = path.join(directory, "history.jsonl")
      fs.writeFileSync(historyPath, history(2) + "{\"role\":\"user\",\"content\":\"broken by hand\n" + history(4))
      const memory = yield* Memory.make(directory)
      const compactor = yield* compactorOver(memory, FoldStore.make(memory.memoryDir), ["First.", "Second."])
      const logs = yield* captureLogs
      const report = yield* compactor.compactNow.pipe(Effect.provide(logs.layer))
      expect(Option.map(report, (done) => [done.summarised, done.skipped])).toEqual(Option.some([4, 1]))
      expect(logs.lines.filter((entry) => entry.startsWith("WARN"))).toEqual([
        "WARN compaction: dropped 1 line of history.jsonl that did not decode (not a JSON line of a user's or " +
        "an assistant's message); it is in neither summary.md nor history.jsonl now"
      ])
      fs.appendFileSync(historyPath, history(4))
      yield* compactor.compactNow.pipe(Effect.provide(logs.layer))
      expect(logs.lines.filter((entry) => entry.startsWith("WARN"))).toHaveLength(1)
    }))
})
