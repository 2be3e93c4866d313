import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Stream } from "effect"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { scanTail } from "../../src/memory/HistoryFile.js"
import { line, memoryStore } from "../support/Harness.js"

/** A memory store with `read`: a file's contents, `undefined` when absent. */
const setup = (files: Record<string, string> = {}) =>
  Effect.map(memoryStore(files), (store) => ({
    ...store,
    read: (name: string) => {
      const file = path.join(store.directory, name)
      return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined
    }
  }))

const manyLines = (count: number, width = 100) =>
  Array.from({ length: count }, (_, i) => line(i % 2 === 0 ? "user" : "assistant", `${i}:${"x".repeat(width)}`)).join("")

describe("history tail", () => {
  it.effect("finds the last lines across block boundaries, with or without a final newline", () =>
    Effect.gen(function*() {
      const { directory } = yield* setup({ "history.jsonl": manyLines(3000) })
      const file = path.join(directory, "history.jsonl")
      const fd = fs.openSync(file, "r")
      const tail = scanTail(fd, 1500)
      const text = fs.readFileSync(file, "utf8")
      expect(tail.count).toBe(1500)
      expect(text.slice(tail.offset).split("\n")[0]).toContain("\"1500:")
      expect(scanTail(fd, 5000)).toEqual({ offset: 0, count: 3000 })
      fs.closeSync(fd)
      fs.writeFileSync(file, "a\nb\nc")
      const fd2 = fs.openSync(file, "r")
      expect(scanTail(fd2, 1)).toEqual({ offset: 4, count: 1 })
      expect(scanTail(fd2, 3)).toEqual({ offset: 0, count: 3 })
      fs.closeSync(fd2)
    }))

  it.effect("skips lines that do not decode and never sends them", () =>
    Effect.gen(function*() {
      const { memory } = yield* setup({
        "history.jsonl": line("user", "u1") + "{not json\n" + "{\"role\":\"system\",\"content\":\"x\"}\n" +
          line("assistant", "a1")
      })
      const snapshot = yield* memory.snapshot(10)
      expect(snapshot.history).toEqual([{ role: "user", content: "u1" }, { role: "assistant", content: "a1" }])
    }))

  it.effect("appends on a new line when the file lacks its final newline, in the original's exact format", () =>
    Effect.gen(function*() {
      const { memory, read } = yield* setup({ "history.jsonl": line("user", "u1").trimEnd() })
      yield* memory.append([{ role: "assistant", content: "a \"quoted\"\nline" }])
      expect(read("history.jsonl")).toBe(line("user", "u1") + "{\"role\":\"assistant\",\"content\":\"a \\\"quoted\\\"\\nline\"}\n")
    }))

  it.effect("counts what it appends to an empty history as the whole file, even one emptied by hand since the last count", () =>
    Effect.gen(function*() {
      const { directory, memory } = yield* setup()
      const file = path.join(directory, "history.jsonl")
      yield* memory.append([{ role: "user", content: "one\ntwo" }, { role: "assistant", content: "a" }])
      expect(yield* memory.hasMoreLinesThan(1)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(2)).toBe(false)
      yield* memory.append([{ role: "user", content: "u" }, { role: "assistant", content: "a" }])
      expect(yield* memory.hasMoreLinesThan(3)).toBe(true)
      // Emptied in place (the same inode): the next append starts the count over.
      fs.truncateSync(file, 0)
      yield* memory.append([{ role: "user", content: "after" }])
      expect(yield* memory.hasMoreLinesThan(0)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(1)).toBe(false)
      expect(fs.readFileSync(file, "utf8")).toBe(line("user", "after"))
    }))

  it.effect("keeps the line count right across its own appends, other writers and a replaced file", () =>
    Effect.gen(function*() {
      const { directory, memory } = yield* setup({ "history.jsonl": manyLines(3).trimEnd() })
      const file = path.join(directory, "history.jsonl")
      expect(yield* memory.hasMoreLinesThan(1_000_000)).toBe(false)
      expect(yield* memory.hasMoreLinesThan(2)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(3)).toBe(false)
      // Completes the unterminated third line and adds two.
      yield* memory.append([{ role: "user", content: "u" }, { role: "assistant", content: "a" }])
      expect(yield* memory.hasMoreLinesThan(1_000_000)).toBe(false)
      expect(yield* memory.hasMoreLinesThan(4)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(5)).toBe(false)
      // Another process appends, one line without its newline.
      fs.appendFileSync(file, line("user", "x") + line("assistant", "y").trimEnd())
      expect(yield* memory.hasMoreLinesThan(6)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(7)).toBe(false)
      // The file is replaced (a new inode): counted afresh.
      fs.rmSync(file)
      fs.writeFileSync(file, line("user", "only"))
      expect(yield* memory.hasMoreLinesThan(0)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(1)).toBe(false)
    }))

  it.effect("counts lines only as far as needed", () =>
    Effect.gen(function*() {
      const { memory } = yield* setup({ "history.jsonl": manyLines(10) })
      expect(yield* memory.hasMoreLinesThan(9)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(10)).toBe(false)
    }))
})

describe("compaction commit", () => {
  it.effect("keeps the tail and every line appended after the plan", () =>
    Effect.gen(function*() {
      const history = line("user", "u1") + line("assistant", "a1") + line("user", "u2") + line("assistant", "a2")
      const { memory, folds, read } = yield* setup({ "history.jsonl": history })
      const plan = Option.getOrThrow(yield* folds.planFold(2))
      const folded = yield* folds.linesToFold(plan).pipe(Stream.runCollect)
      expect(folded).toEqual([line("user", "u1").trim(), line("assistant", "a1").trim()])
      // A usual fold is also read whole, without a stream: the same lines.
      expect(yield* folds.readLinesToFold(plan)).toEqual(Option.some(folded))
      yield* memory.append([{ role: "user", content: "u3" }, { role: "assistant", content: "a3" }])
      const result = yield* folds.commitFold(plan, "new summary")
      expect(result.kept).toBe(4)
      expect(read("summary.md")).toBe("new summary\n")
      expect(read("history.jsonl")).toBe(
        line("user", "u2") + line("assistant", "a2") + line("user", "u3") + line("assistant", "a3")
      )
    }))

  it.effect("a fold of more than 1 MiB is not read whole: it is streamed, line for line the same", () =>
    Effect.gen(function*() {
      const big = "x".repeat(2000)
      const lines = Array.from({ length: 600 }, (_, i) => line(i % 2 === 0 ? "user" : "assistant", `${i} ${big}`))
      const { folds } = yield* setup({ "history.jsonl": lines.join("") })
      const plan = Option.getOrThrow(yield* folds.planFold(2))
      expect(plan.splitOffset).toBeGreaterThan(1024 * 1024)
      expect(yield* folds.readLinesToFold(plan)).toEqual(Option.none())
      const folded = yield* folds.linesToFold(plan).pipe(Stream.runCollect)
      expect(folded).toEqual(lines.slice(0, 598).map((each) => each.trim()))
    }))

  it.effect("completes a commit interrupted after its journal was written", () =>
    Effect.gen(function*() {
      const { memory, read } = yield* setup({
        "history.jsonl": line("user", "old") + line("assistant", "old") + line("user", "kept") +
          line("assistant", "kept"),
        "summary.md": "old summary\n",
        ".summary.md.next": "new summary\n",
        ".history.jsonl.next": line("user", "kept") + line("assistant", "kept"),
        ".compaction-commit": ""
      })
      const snapshot = yield* memory.snapshot(10)
      expect(snapshot.summary).toBe("new summary")
      expect(snapshot.history).toEqual([{ role: "user", content: "kept" }, { role: "assistant", content: "kept" }])
      expect(read(".compaction-commit")).toBeUndefined()
      expect(read(".history.jsonl.next")).toBeUndefined()
    }))

  it.effect("discards a commit interrupted before its journal was written", () =>
    Effect.gen(function*() {
      const history = line("user", "u") + line("assistant", "a")
      const { memory, read } = yield* setup({
        "history.jsonl": history,
        "summary.md": "old summary\n",
        ".summary.md.next": "half-writ"
      })
      yield* memory.snapshot(10)
      expect(read("summary.md")).toBe("old summary\n")
      expect(read("history.jsonl")).toBe(history)
      expect(read(".summary.md.next")).toBeUndefined()
    }))

  it.effect("refuses to commit over a history replaced meanwhile", () =>
    Effect.gen(function*() {
      const history = line("user", "u1") + line("assistant", "a1") + line("user", "u2")
      const { directory, folds, read } = yield* setup({ "history.jsonl": history })
      const plan = Option.getOrThrow(yield* folds.planFold(1))
      fs.rmSync(path.join(directory, "history.jsonl"))
      fs.writeFileSync(path.join(directory, "history.jsonl"), line("user", "x"))
      const exit = yield* Effect.exit(folds.commitFold(plan, "s"))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(read("summary.md")).toBeUndefined()
      expect(read("history.jsonl")).toBe(line("user", "x"))
    }))

  it.effect("allows one compaction at a time, across processes", () =>
    Effect.gen(function*() {
      const { directory, folds } = yield* setup()
      const sleeper = yield* Effect.acquireRelease(
        Effect.sync(() => child.spawn("sleep", ["30"], { stdio: "ignore" })),
        (process) => Effect.sync(() => process.kill("SIGKILL"))
      )
      fs.writeFileSync(path.join(directory, ".planckclaw-compact.lock"), `${sleeper.pid}\n`)
      const busy = yield* Effect.flip(folds.exclusiveCompaction(Effect.succeed("ran")))
      expect(busy).toMatchObject({ _tag: "CompactionBusy", ownerPid: sleeper.pid })
      // A lock left by a dead process is taken over.
      sleeper.kill("SIGKILL")
      yield* Effect.callback<void>((resume) => void sleeper.once("exit", () => resume(Effect.void)))
      expect(yield* folds.exclusiveCompaction(Effect.succeed("ran"))).toBe("ran")
      expect(fs.existsSync(path.join(directory, ".planckclaw-compact.lock"))).toBe(false)
    }))

  it.effect("the fold store built on a Memory shares its directory: one compaction at a time in this process too", () =>
    Effect.gen(function*() {
      const { memory, folds } = yield* setup()
      // As Compactor.layer builds it: from the Memory it is given, not a directory of its own.
      const built = FoldStore.layer.pipe(Layer.provide(Layer.succeed(Memory.Memory, memory)))
      const fromLayer = yield* Effect.provide(FoldStore.FoldStore, built)
      const inner = yield* Effect.flip(folds.exclusiveCompaction(fromLayer.exclusiveCompaction(Effect.succeed("ran"))))
      expect(inner).toMatchObject({ _tag: "CompactionBusy", ownerPid: process.pid })
    }))
})
