/**
 * A summary the brain cut off at the compaction's token limit: kept (failing
 * would ask again, and pay, after every turn to the same end), but said, so
 * the loss at its end is not silent.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { captureLogs } from "../support/LogCapture.js"
import { tempDir } from "../support/Sandbox.js"
import { compactorOver, history } from "./CompactorKit.js"

describe("a compaction whose summary was cut off", () => {
  it.effect("keeps it and warns that its end is lost; a whole summary gives no such warning", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      fs.writeFileSync(path.join(directory, "history.jsonl"), history(6))
      const memory = yield* Memory.make(directory)
      const cut = { ...ScriptedBrain.text("The user likes di"), stop_reason: "max_tokens" as const }
      const compactor = yield* compactorOver(memory, FoldStore.make(memory.memoryDir), [cut, "Whole."])
      const logs = yield* captureLogs
      const report = yield* compactor.compactNow.pipe(Effect.provide(logs.layer))
      expect(Option.map(report, (done) => done.summarised)).toEqual(Option.some(4))
      expect(fs.readFileSync(path.join(directory, "summary.md"), "utf8")).toBe("The user likes di\n")
      expect(logs.lines.filter((entry) => entry.startsWith("WARN"))).toEqual([
        "WARN compaction: the summary reached its 2048-token limit and was cut off: what it held past that is lost; " +
        "shorten summary.md by hand so the next one fits"
      ])
      fs.appendFileSync(path.join(directory, "history.jsonl"), history(4))
      yield* compactor.compactNow.pipe(Effect.provide(logs.layer))
      expect(logs.lines.filter((entry) => entry.startsWith("WARN"))).toHaveLength(1)
    }))
})
