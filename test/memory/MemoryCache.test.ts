/**
 * The snapshot and ledger caches (issue 11): a turn reads soul.md,
 * summary.md and the history tail again only when their status changed, so
 * every change made outside this store must still be seen on the next
 * message: hand edits, lines appended by another process, a compaction
 * committed by another process.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it, vi } from "@effect/vitest"
import { Effect, Fiber, Option, Result } from "effect"
import { TestClock } from "effect/testing"
import * as FileCache from "../../src/memory/FileCache.js"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { line } from "../support/Harness.js"
import { tempDir } from "../support/Sandbox.js"

const setup = (files: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const directory = yield* tempDir()
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(directory, name), content)
    const memory = yield* Memory.make(directory)
    const file = (name: string) => path.join(directory, name)
    return { directory, memory, file }
  })

const exchange = (user: string, assistant: string): ReadonlyArray<Memory.HistoryEntry> => [
  { role: "user", content: user },
  { role: "assistant", content: assistant }
]

/** Back-dates a file, so its cached content is trusted by status alone (not "racily clean"). */
const age = (file: string, secondsAgo: number) => {
  const when = new Date(Date.now() - secondsAgo * 1000)
  fs.utimesSync(file, when, when)
}

/** The directory's write lock, as another live process holds it: a locked read would wait for it. Let go with the scope, or by the returned effect. */
const heldByAnother = (file: string) =>
  Effect.gen(function*() {
    const other = child.spawn("sleep", ["60"], { stdio: "ignore" })
    yield* Effect.addFinalizer(() => Effect.sync(() => other.kill()))
    fs.symlinkSync(String(other.pid), file)
    return Effect.sync(() => fs.rmSync(file))
  })

/** `read`'s value if it comes without waiting for a lock (none if still waiting after 5 s of the test clock). */
const withoutWaiting = <A, E>(read: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(Effect.timeoutOption(read, "5 seconds"))
    yield* TestClock.adjust("5 seconds")
    return yield* Fiber.join(fiber)
  })

describe("snapshot caches", () => {
  it.effect("a directory made just now: the first snapshot reads nothing under the lock, and the appends keep its window", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const memory = yield* Memory.make(directory, { fresh: true })
      const lock = path.join(directory, ".planckclaw-write.lock")
      const letGo = yield* heldByAnother(lock)
      expect(yield* withoutWaiting(memory.snapshot(40))).toEqual(Option.some({ soul: Memory.DEFAULT_SOUL, summary: "", history: [] }))
      yield* letGo
      yield* memory.append(exchange("u1", "a1"), { exchange: "k1" })
      yield* heldByAnother(lock)
      // Served from the window the first snapshot kept (for 40 lines), which the append filled.
      const window = yield* withoutWaiting(memory.snapshot(40))
      expect(Option.map(window, (read) => read.history.map((entry) => entry.content))).toEqual(Option.some(["u1", "a1"]))
    }))

  it.effect("a directory made just now: a summary or history put there before the first snapshot is read", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const memory = yield* Memory.make(directory, { fresh: true })
      fs.writeFileSync(path.join(directory, "summary.md"), "put there by hand")
      fs.writeFileSync(path.join(directory, "history.jsonl"), line("user", "u0"))
      expect(yield* memory.snapshot(40)).toMatchObject({ summary: "put there by hand", history: [{ role: "user", content: "u0" }] })
    }))

  it.effect("no history read for one window answers another without the lock, until a history appears", () =>
    Effect.gen(function*() {
      const { file, memory } = yield* setup({ "summary.md": "summary A" })
      age(file("summary.md"), 3600)
      expect((yield* memory.snapshot(40)).history).toEqual([])
      const letGo = yield* heldByAnother(file(".planckclaw-write.lock"))
      expect(yield* withoutWaiting(memory.snapshot(80))).toEqual(Option.some({ soul: Memory.DEFAULT_SOUL, summary: "summary A", history: [] }))
      yield* letGo
      fs.writeFileSync(file("history.jsonl"), line("user", "u0"))
      expect((yield* memory.snapshot(40)).history.map((entry) => entry.content)).toEqual(["u0"])
    }))

  it.effect("a hand edit of soul.md or summary.md between two turns is seen, even one of the same size right away", () =>
    Effect.gen(function*() {
      const { file, memory } = yield* setup({ "soul.md": "persona A", "summary.md": "summary A" })
      expect(yield* memory.snapshot(10)).toMatchObject({ soul: "persona A", summary: "summary A" })
      fs.writeFileSync(file("soul.md"), "persona B")
      fs.writeFileSync(file("summary.md"), "summary B")
      expect(yield* memory.snapshot(10)).toMatchObject({ soul: "persona B", summary: "summary B" })
      fs.rmSync(file("soul.md"))
      expect((yield* memory.snapshot(10)).soul).toBe(Memory.DEFAULT_SOUL)
      fs.writeFileSync(file("soul.md"), "persona C")
      expect((yield* memory.snapshot(10)).soul).toBe("persona C")
    }))

  it.effect("soul and summary without history (a compaction's read) take no lock, see a hand edit, and leave the turns' cache as it was", () =>
    Effect.gen(function*() {
      const { file, memory } = yield* setup({ "soul.md": "persona A", "summary.md": "summary A", "history.jsonl": line("user", "u1") })
      age(file("summary.md"), 3600)
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["u1"])
      // Another live process holds the write lock: a read of the history would wait for it; this one does not.
      const other = child.spawn("sleep", ["60"], { stdio: "ignore" })
      yield* Effect.addFinalizer(() => Effect.sync(() => other.kill()))
      fs.symlinkSync(String(other.pid), file(".planckclaw-write.lock"))
      expect(yield* memory.snapshot(0)).toEqual({ soul: "persona A", summary: "summary A", history: [] })
      fs.writeFileSync(file("summary.md"), "summary B")
      expect((yield* memory.snapshot(0)).summary).toBe("summary B")
      fs.rmSync(file(".planckclaw-write.lock"))
      // The turns' window is still cached, and the summary is seen changed there too.
      expect(yield* memory.snapshot(10)).toMatchObject({ summary: "summary B", history: [{ role: "user", content: "u1" }] })
    }))

  it.effect("an edit of a file cached long ago is seen by its new time, whatever its size", () =>
    Effect.gen(function*() {
      const { file, memory } = yield* setup({ "soul.md": "persona A", "summary.md": "summary A" })
      age(file("soul.md"), 3600)
      age(file("summary.md"), 3600)
      expect(yield* memory.snapshot(10)).toMatchObject({ soul: "persona A", summary: "summary A" })
      expect(yield* memory.snapshot(10)).toMatchObject({ soul: "persona A", summary: "summary A" })
      // Same size, in place (same inode), a different time: seen.
      fs.writeFileSync(file("soul.md"), "persona Z")
      age(file("soul.md"), 1800)
      fs.writeFileSync(file("summary.md"), "summary Z")
      age(file("summary.md"), 1800)
      expect(yield* memory.snapshot(10)).toMatchObject({ soul: "persona Z", summary: "summary Z" })
    }))

  it.effect("without a soul.md of its own, the fallback soul file is the persona, its edits seen like soul.md's", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const host = yield* tempDir()
      const fallbackSoulFile = path.join(host, "soul.md")
      const file = (name: string) => path.join(directory, name)
      const memory = yield* Memory.make(directory, { fallbackSoulFile })
      expect((yield* memory.snapshot(10)).soul).toBe(Memory.DEFAULT_SOUL)
      fs.writeFileSync(fallbackSoulFile, "host persona A\n")
      expect((yield* memory.snapshot(10)).soul).toBe("host persona A")
      age(fallbackSoulFile, 3600)
      expect((yield* memory.snapshot(10)).soul).toBe("host persona A")
      fs.writeFileSync(fallbackSoulFile, "host persona B\n")
      age(fallbackSoulFile, 1800)
      expect((yield* memory.snapshot(10)).soul).toBe("host persona B")
      fs.writeFileSync(file("soul.md"), "   \n")
      expect((yield* memory.snapshot(10)).soul).toBe("host persona B")
      fs.writeFileSync(file("soul.md"), "my own persona")
      expect((yield* memory.snapshot(10)).soul).toBe("my own persona")
      fs.rmSync(file("soul.md"))
      fs.rmSync(fallbackSoulFile)
      expect((yield* memory.snapshot(10)).soul).toBe(Memory.DEFAULT_SOUL)
    }))

  it.effect("the history tail follows this store's own appends and keeps the last lines only", () =>
    Effect.gen(function*() {
      const { memory } = yield* setup({ "history.jsonl": line("user", "u0") + line("assistant", "a0") })
      expect((yield* memory.snapshot(3)).history.map((entry) => entry.content)).toEqual(["u0", "a0"])
      yield* memory.append(exchange("u1", "a1"), { exchange: "k1" })
      expect((yield* memory.snapshot(3)).history.map((entry) => entry.content)).toEqual(["a0", "u1", "a1"])
      yield* memory.append(exchange("u2", "a2"), { exchange: "k2" })
      expect((yield* memory.snapshot(3)).history.map((entry) => entry.content)).toEqual(["a1", "u2", "a2"])
      expect((yield* memory.snapshot(6)).history.map((entry) => entry.content)).toEqual(["u0", "a0", "u1", "a1", "u2", "a2"])
    }))

  // Date.now() set a second back while the store writes or reads: a hand
  // edit made a moment later is then surely past the store's own step,
  // whatever the kernel's clock tick (an edit in the same tick is not told apart).
  const aSecondAgo = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const now = Date.now()
        return vi.spyOn(Date, "now").mockImplementation(() => now - 1000)
      }),
      () => effect,
      (spy) => Effect.sync(() => spy.mockRestore())
    )

  it.effect("a same-size hand edit of history.jsonl after the store's own append is seen on the next message and after", () =>
    Effect.gen(function*() {
      const { file, memory } = yield* setup()
      yield* memory.snapshot(10)
      yield* aSecondAgo(memory.append(exchange("what is 2+2", "it is 5"), { exchange: "k1" }))
      const before = fs.statSync(file("history.jsonl"))
      // In place, the same length (as an editor saving over it, or `cp` onto it).
      fs.writeFileSync(file("history.jsonl"), fs.readFileSync(file("history.jsonl"), "utf8").replace("it is 5", "it is 4"))
      const after = fs.statSync(file("history.jsonl"))
      expect([after.ino, after.size]).toEqual([before.ino, before.size])
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["what is 2+2", "it is 4"])
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["what is 2+2", "it is 4"])
      // The store's next append follows the edited text.
      yield* memory.append(exchange("and 3+3", "6"), { exchange: "k2" })
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["what is 2+2", "it is 4", "and 3+3", "6"])
    }))

  it.effect("a same-size hand edit of history.jsonl just after a read of a history written a moment before is seen", () =>
    Effect.gen(function*() {
      const { file, memory } = yield* setup({ "history.jsonl": line("user", "u1") + line("assistant", "five") })
      // Read while racily clean (written just now): trusted by inode and size, not by times.
      expect((yield* aSecondAgo(memory.snapshot(10))).history.map((entry) => entry.content)).toEqual(["u1", "five"])
      fs.writeFileSync(file("history.jsonl"), line("user", "u1") + line("assistant", "FIVE"))
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["u1", "FIVE"])
    }))

  it.effect("a history line appended by another process is seen on the next snapshot and counted", () =>
    Effect.gen(function*() {
      const { file, memory } = yield* setup()
      yield* memory.append(exchange("u1", "a1"), { exchange: "k1" })
      expect((yield* memory.snapshot(10)).history).toHaveLength(2)
      child.execFileSync(process.execPath, [
        "-e",
        `require("node:fs").appendFileSync(${JSON.stringify(file("history.jsonl"))}, ${JSON.stringify(line("user", "from elsewhere"))})`
      ])
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["u1", "a1", "from elsewhere"])
      expect(yield* memory.hasMoreLinesThan(2)).toBe(true)
      // Our next append goes after it, on its own line, and the tail follows.
      yield* memory.append(exchange("u2", "a2"), { exchange: "k2" })
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["u1", "a1", "from elsewhere", "u2", "a2"])
      expect(fs.readFileSync(file("history.jsonl"), "utf8")).toBe(
        [line("user", "u1"), line("assistant", "a1"), line("user", "from elsewhere"), line("user", "u2"), line("assistant", "a2")].join("")
      )
    }))

  it.effect("a compaction committed by another store (as `planckclaw compact` does) is seen: new summary, shorter history", () =>
    Effect.gen(function*() {
      const { directory, file, memory } = yield* setup()
      yield* memory.append(exchange("u1", "a1"), { exchange: "k1" })
      yield* memory.append(exchange("u2", "a2"), { exchange: "k2" })
      expect(yield* memory.snapshot(10)).toMatchObject({ summary: "", history: exchange("u1", "a1").concat(exchange("u2", "a2")) })
      // Another process's store on the same directory: its own caches, the same files and locks.
      const other = yield* Memory.make(directory)
      const folds = FoldStore.make(other.memoryDir)
      const plan = yield* folds.planFold(2)
      yield* folds.commitFold(Option.getOrThrow(plan), "folded u1")
      expect(yield* memory.snapshot(10)).toMatchObject({ summary: "folded u1", history: exchange("u2", "a2") })
      // A replay of k1 (folded) or k2 (kept) stores nothing; k3 goes after the kept tail.
      yield* memory.append(exchange("u1", "a1"), { exchange: "k1" })
      yield* memory.append(exchange("u2", "a2"), { exchange: "k2" })
      yield* memory.append(exchange("u3", "a3"), { exchange: "k3" })
      expect(fs.readFileSync(file("history.jsonl"), "utf8")).toBe(
        [line("user", "u2"), line("assistant", "a2"), line("user", "u3"), line("assistant", "a3")].join("")
      )
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["u2", "a2", "u3", "a3"])
      expect(yield* memory.hasMoreLinesThan(4)).toBe(false)
      expect(yield* memory.hasMoreLinesThan(3)).toBe(true)
    }))

  it.effect("the summary a compaction writes is trusted by status at once, and an edit of the same size right after is seen", () =>
    Effect.gen(function*() {
      const { file, memory } = yield* setup()
      yield* memory.append(exchange("u1", "a1"), { exchange: "k1" })
      yield* memory.append(exchange("u2", "a2"), { exchange: "k2" })
      const folds = FoldStore.make(memory.memoryDir)
      const committedAt = Date.now()
      yield* folds.commitFold(Option.getOrThrow(yield* folds.planFold(2)), "summary one")
      // Dated back, so no later write can share its timestamp: not "racily clean", no read on every message.
      // Against its own ctime (set when it was dated back), not this test's clock: a slow commit cannot fail it.
      const stat = fs.statSync(file("summary.md"))
      expect(stat.mtimeMs).toBeLessThanOrEqual(stat.ctimeMs - FileCache.RACY_MS)
      expect(stat.ctimeMs).toBeGreaterThanOrEqual(committedAt - FileCache.RACY_MS)
      const read = FileCache.readText(file("summary.md"))
      expect(Result.isSuccess(read) && read.success.racy).toBe(false)
      expect(yield* memory.snapshot(10)).toMatchObject({ summary: "summary one" })
      // A hand edit in place, same size, at once: the next snapshot has it.
      fs.writeFileSync(file("summary.md"), "summary two")
      expect(yield* memory.snapshot(10)).toMatchObject({ summary: "summary two" })
    }))

  it.effect("the ledger is appended to, read back whole by a new store, and a torn last line is not glued to the next", () =>
    Effect.gen(function*() {
      const { directory, file, memory } = yield* setup()
      for (let i = 0; i < 4; i++) yield* memory.append(exchange(`u${i}`, `a${i}`), { exchange: `k${i}` })
      const ledger = fs.readFileSync(file(".history-ledger.json"), "utf8")
      expect(ledger.trimEnd().split("\n").length).toBeGreaterThan(1)
      // A crash in the middle of a ledger write leaves a torn line.
      fs.appendFileSync(file(".history-ledger.json"), "{\"inode\":1,\"ke")
      const next = yield* Memory.make(directory)
      // Every key written is known to a new store: none is stored twice.
      for (let i = 0; i < 4; i++) yield* next.append(exchange(`u${i}`, `a${i}`), { exchange: `k${i}` })
      yield* next.append(exchange("u4", "a4"), { exchange: "k4" })
      yield* next.append(exchange("u4", "a4"), { exchange: "k4" })
      const again = yield* Memory.make(directory)
      yield* again.append(exchange("u4", "a4"), { exchange: "k4" })
      const history = fs.readFileSync(file("history.jsonl"), "utf8")
      expect(history.split("\n").filter((raw) => raw !== "")).toHaveLength(10)
    }))
})
