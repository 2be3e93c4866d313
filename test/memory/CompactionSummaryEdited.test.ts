/**
 * summary.md is the user's to edit by hand (a cut-off summary's warning asks
 * for it). An edit made while a compaction waits on the brain must not be
 * overwritten by a summary built from the text before it: the commit is
 * refused, both files stay as they are, and the next compaction folds from
 * the edited summary. So with history.jsonl edited in place (nano saves so)
 * in a way that moves its lines: the commit must not keep a tail cut at the
 * plan's offset, which now falls in the middle of a line.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { tempDir } from "../support/Sandbox.js"
import { compactorOver, history } from "./CompactorKit.js"

describe("summary.md edited by hand during a compaction", () => {
  it.effect("keeps the edit and history; the next compaction commits", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const summaryPath = path.join(directory, "summary.md")
      const historyPath = path.join(directory, "history.jsonl")
      fs.writeFileSync(historyPath, history(6))
      fs.writeFileSync(summaryPath, "Likes tea.\n")
      const memory = yield* Memory.make(directory)
      const store = FoldStore.make(memory.memoryDir)
      let edits = 0
      // The edit lands after the brain answered, before the commit: the widest window, as a slow brain leaves it.
      const folds: FoldStore.FoldStoreService = {
        ...store,
        commitFold: (plan, summary, between) =>
          Effect.andThen(
            Effect.sync(() => edits++ === 0 && fs.writeFileSync(summaryPath, "Likes coffee now, not tea.\n")),
            store.commitFold(plan, summary, between)
          )
      }
      const foldedFrom: Array<string> = []
      const compactor = yield* compactorOver(memory, folds, [
        "Likes tea (from the old summary).",
        (request) => {
          foldedFrom.push(String(request.messages[0]?.content))
          return Effect.succeed(ScriptedBrain.text("Likes coffee."))
        }
      ])

      const refused = yield* Effect.flip(compactor.compactNow)
      expect(refused.message).toBe("summary.md was changed during compaction; nothing changed")
      expect(fs.readFileSync(summaryPath, "utf8")).toBe("Likes coffee now, not tea.\n")
      expect(fs.readFileSync(historyPath, "utf8")).toBe(history(6))

      const report = yield* compactor.compactNow
      expect(Option.map(report, (done) => done.summarised)).toEqual(Option.some(4))
      expect(foldedFrom[0]).toContain("EXISTING SUMMARY:\nLikes coffee now, not tea.\n")
      expect(fs.readFileSync(summaryPath, "utf8")).toBe("Likes coffee.\n")
      expect(fs.readFileSync(historyPath, "utf8").split("\n").filter((text) => text.length > 0)).toHaveLength(2)
    }))
})

describe("history.jsonl edited in place during a compaction", () => {
  it.effect("a line removed before the kept tail: nothing is committed, no line is cut, and the next compaction folds the edited history", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const historyPath = path.join(directory, "history.jsonl")
      fs.writeFileSync(historyPath, history(6))
      const memory = yield* Memory.make(directory)
      const store = FoldStore.make(memory.memoryDir)
      const edited = history(6).split("\n").filter((text) => !text.includes("\"m0\"")).join("\n")
      let edits = 0
      // The first line removed in place (same inode, file rewritten from its start) while the brain summarised.
      const folds: FoldStore.FoldStoreService = {
        ...store,
        commitFold: (plan, summary, between) =>
          Effect.andThen(
            Effect.sync(() => {
              if (edits++ > 0) return
              const inode = fs.statSync(historyPath).ino
              const fd = fs.openSync(historyPath, "r+")
              fs.ftruncateSync(fd, 0)
              fs.writeSync(fd, edited, 0)
              fs.closeSync(fd)
              expect(fs.statSync(historyPath).ino).toBe(inode)
            }),
            store.commitFold(plan, summary, between)
          )
      }
      const compactor = yield* compactorOver(memory, folds, ["From m0 to m3.", "From m1 to m3."])

      const refused = yield* Effect.flip(compactor.compactNow)
      expect(refused.message).toBe("history.jsonl was edited during compaction; nothing changed")
      expect(fs.readFileSync(historyPath, "utf8")).toBe(edited)
      expect(fs.existsSync(path.join(directory, "summary.md"))).toBe(false)

      const report = yield* compactor.compactNow
      expect(Option.map(report, (done) => done.summarised)).toEqual(Option.some(3))
      expect(fs.readFileSync(historyPath, "utf8")).toBe(history(6).split("\n").slice(4).join("\n"))
    }))
})
