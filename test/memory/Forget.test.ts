/**
 * Forget as a commit: every state a kill can leave (before the journal,
 * after it with none, some or all of the renames done) is read by the next
 * process as the old memory or the fresh one, with the archive beside it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Forget from "../../src/memory/Forget.js"
import * as Layout from "../../src/memory/Layout.js"
import * as Memory from "../../src/memory/Memory.js"
import { line } from "../support/Harness.js"
import { tempDir } from "../support/Sandbox.js"

const HISTORY = line("user", "u1") + line("assistant", "a1")
const SUMMARY = "The user is Marc.\n"
const LEDGER = `${JSON.stringify({ inode: 1, exchanges: [] })}\n`
const ARCHIVE = "archive/2026-11-30T19-00-00Z"

const memoryDir = Effect.gen(function*() {
  const directory = yield* tempDir()
  fs.writeFileSync(path.join(directory, "history.jsonl"), HISTORY)
  fs.writeFileSync(path.join(directory, "summary.md"), SUMMARY)
  fs.writeFileSync(path.join(directory, ".history-ledger.json"), LEDGER)
  return directory
})

const files = (directory: string) =>
  fs.readdirSync(directory, { recursive: true }).map(String).filter((name) => !name.includes(".planckclaw")).sort()

describe("Forget", () => {
  it("names archives after the UTC time, without colons", () => {
    expect(Forget.stampOf(Date.UTC(2026, 10, 30, 19, 5, 12, 345))).toBe("2026-11-30T19-05-12Z")
  })

  it.effect("moves the three files into a new archive and leaves nothing behind; a second one in the same second gets its own", () =>
    Effect.gen(function*() {
      const directory = yield* memoryDir
      const memory = yield* Memory.make(directory)
      expect(yield* memory.forgetPreview).toEqual({ historyLines: 2, historyBytes: HISTORY.length, summaryBytes: SUMMARY.length })
      const done = yield* memory.forget("2026-11-30T19-00-00Z")
      expect(done).toEqual(Option.some({ archive: ARCHIVE, files: ["summary.md", ".history-ledger.json", "history.jsonl"] }))
      expect(files(directory)).toEqual([
        "archive",
        ARCHIVE,
        `${ARCHIVE}/.history-ledger.json`,
        `${ARCHIVE}/history.jsonl`,
        `${ARCHIVE}/summary.md`
      ])
      expect(fs.readFileSync(path.join(directory, ARCHIVE, "history.jsonl"), "utf8")).toBe(HISTORY)
      expect((yield* memory.snapshot(10)).history).toEqual([])
      yield* memory.append([{ role: "user", content: "u2" }, { role: "assistant", content: "a2" }])
      expect(yield* memory.forget("2026-11-30T19-00-00Z")).toEqual(
        Option.some({ archive: `${ARCHIVE}-2`, files: ["history.jsonl"] })
      )
      expect(yield* memory.forget("2026-11-30T19-00-00Z")).toEqual(Option.none())
    }))

  it.effect("an archive/ on another file system (a link to it) is refused before the commit: memory stays usable, and forgets once it is a plain directory", () =>
    Effect.gen(function*() {
      const directory = yield* memoryDir
      // tmpfs: another file system than the test's temporary directory.
      const elsewhere = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync("/dev/shm/planckclaw-archive-")),
        (made) => Effect.sync(() => fs.rmSync(made, { recursive: true, force: true }))
      )
      expect(fs.statSync(elsewhere).dev).not.toBe(fs.statSync(directory).dev)
      fs.symlinkSync(elsewhere, path.join(directory, "archive"))
      const memory = yield* Memory.make(directory)
      const refused = yield* Effect.flip(memory.forget("2026-11-30T19-00-00Z"))
      expect(refused.message).toBe(
        `${path.join(directory, "archive")} is on another file system than ${directory} (a link or a mount), ` +
          "and forgetting moves the files there by rename: make it a directory of the memory directory's own file system"
      )
      expect(fs.readdirSync(elsewhere)).toEqual([])
      expect(fs.existsSync(path.join(directory, ".compaction-commit"))).toBe(false)
      // Nothing moved, nothing left half done: turns read and store as before.
      expect((yield* memory.snapshot(10)).history).toHaveLength(2)
      yield* memory.append([{ role: "user", content: "u2" }, { role: "assistant", content: "a2" }])
      expect(fs.readFileSync(path.join(directory, "history.jsonl"), "utf8")).toBe(HISTORY + line("user", "u2") + line("assistant", "a2"))
      fs.unlinkSync(path.join(directory, "archive"))
      expect(Option.map(yield* memory.forget("2026-11-30T19-00-00Z"), (done) => done.archive)).toEqual(Option.some(ARCHIVE))
    }))

  it.effect("a kill before the journal leaves the old memory (and an empty archive directory)", () =>
    Effect.gen(function*() {
      const directory = yield* memoryDir
      fs.mkdirSync(path.join(directory, ARCHIVE), { recursive: true })
      const memory = yield* Memory.make(directory)
      const snapshot = yield* memory.snapshot(10)
      expect(snapshot.summary).toBe(SUMMARY.trim())
      expect(snapshot.history).toHaveLength(2)
      expect(fs.readdirSync(path.join(directory, ARCHIVE))).toEqual([])
    }))

  for (const moved of [0, 1, 2, 3]) {
    it.effect(`a kill after the journal with ${moved} of 3 files moved is finished by the next process: the fresh memory`, () =>
      Effect.gen(function*() {
        const directory = yield* memoryDir
        const paths = Layout.files(directory)
        fs.mkdirSync(path.join(directory, ARCHIVE), { recursive: true })
        fs.writeFileSync(paths.journal, Layout.forgetJournal(ARCHIVE))
        for (const file of Layout.forgotten(paths).slice(0, moved)) {
          fs.renameSync(file, path.join(directory, ARCHIVE, path.basename(file)))
        }
        const memory = yield* Memory.make(directory)
        const snapshot = yield* memory.snapshot(10)
        expect(snapshot).toEqual({ soul: Memory.DEFAULT_SOUL, summary: "", history: [] })
        expect(fs.existsSync(paths.journal)).toBe(false)
        expect(fs.readFileSync(path.join(directory, ARCHIVE, "history.jsonl"), "utf8")).toBe(HISTORY)
        expect(fs.readFileSync(path.join(directory, ARCHIVE, "summary.md"), "utf8")).toBe(SUMMARY)
        expect(fs.readFileSync(path.join(directory, ARCHIVE, ".history-ledger.json"), "utf8")).toBe(LEDGER)
      }))
  }

  it.effect("a compaction's journal is still a compaction's: its new files are swapped in", () =>
    Effect.gen(function*() {
      const directory = yield* memoryDir
      const paths = Layout.files(directory)
      fs.writeFileSync(paths.nextSummary, "Folded.\n")
      fs.writeFileSync(paths.nextHistory, line("user", "kept") + line("assistant", "tail"))
      fs.writeFileSync(paths.journal, "")
      const snapshot = yield* (yield* Memory.make(directory)).snapshot(10)
      expect(snapshot.summary).toBe("Folded.")
      expect(snapshot.history.map((entry) => entry.content)).toEqual(["kept", "tail"])
      expect(fs.existsSync(path.join(directory, "archive"))).toBe(false)
    }))

  it.effect("a journal naming a path outside archive/ is not followed", () =>
    Effect.gen(function*() {
      const directory = yield* memoryDir
      const paths = Layout.files(directory)
      fs.writeFileSync(paths.journal, JSON.stringify({ forget: "../elsewhere" }))
      const snapshot = yield* (yield* Memory.make(directory)).snapshot(10)
      expect(snapshot.history).toHaveLength(2)
      expect(fs.existsSync(path.join(directory, "..", "elsewhere"))).toBe(false)
    }))
})
