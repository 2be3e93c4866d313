/**
 * A run holding its run lock (MemoryHold) is the only process that appends
 * to its memory directory: its appends skip the per-append write lock
 * file, and a compaction of another process (`planckclaw compact` beside
 * the run) is seen by its compaction lock file, checked after each write,
 * by history's new inode, checked before, or by the written file unlinked,
 * checked last. Each exchange lands exactly once.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import * as RunHeld from "../../src/memory/RunHeld.js"
import { patchFs } from "../support/PatchedFs.js"
import { tempDir } from "../support/Sandbox.js"

const line = (role: "user" | "assistant", content: string) => `${JSON.stringify({ role, content })}\n`
const exchange = (n: number) => [{ role: "user" as const, content: `q${n}` }, { role: "assistant" as const, content: `a${n}` }]
const lines = (...ns: ReadonlyArray<number>) => ns.map((n) => line("user", `q${n}`) + line("assistant", `a${n}`)).join("")

/** A live process that is not us: its pid in a lock file makes the lock held. */
const sleeper = Effect.acquireRelease(
  Effect.sync(() => child.spawn("sleep", ["60"], { stdio: "ignore" })),
  (process) => Effect.sync(() => process.kill("SIGKILL"))
)

/** The pid of a process that has exited: its lock is stale. */
const deadPid = Effect.callback<number>((resume) => {
  const gone = child.spawn("true", [], { stdio: "ignore" })
  gone.once("exit", () => resume(Effect.succeed(gone.pid!)))
})

const setup = (held: boolean) =>
  Effect.gen(function*() {
    const directory = yield* tempDir()
    if (held) yield* Effect.acquireRelease(Effect.sync(() => RunHeld.holdForRun(directory)), (release) => Effect.sync(release))
    const memory = yield* Memory.make(directory)
    const file = (name: string) => path.join(directory, name)
    const read = (name: string) => fs.readFileSync(file(name), "utf8")
    // Two appends under the lock, as a run's first two: the ledger is written whole, then held.
    yield* memory.append(exchange(1), { exchange: "k1" })
    yield* memory.append(exchange(2), { exchange: "k2" })
    return { directory, memory, file, read }
  })

describe("a run's appends without the write lock file", () => {
  it.effect("a run holding its run lock appends while the write lock file names another live process", () =>
    Effect.gen(function*() {
      const { file, memory, read } = yield* setup(true)
      const other = yield* sleeper
      fs.symlinkSync(String(other.pid), file(".planckclaw-write.lock"))
      yield* memory.append(exchange(3), { exchange: "k3" })
      expect(read("history.jsonl")).toBe(lines(1, 2, 3))
      // Written ahead, as under the lock: the ledger names k3's range.
      expect(read(".history-ledger.json").trim().split("\n").at(-1)).toContain("\"key\":\"k3\"")
    }))

  it.effect("without the run lock (an agent of serve) the append still goes through the write lock", () =>
    Effect.gen(function*() {
      const held = yield* setup(true)
      const serve = yield* setup(false)
      // A lock file left by a dead process: taken over (and removed) only by an append that takes the lock.
      const stale = String(yield* deadPid)
      for (const { file } of [held, serve]) fs.symlinkSync(stale, file(".planckclaw-write.lock"))
      for (const { memory } of [held, serve]) yield* memory.append(exchange(3), { exchange: "k3" })
      expect(fs.readlinkSync(held.file(".planckclaw-write.lock"))).toBe(stale)
      expect(fs.existsSync(serve.file(".planckclaw-write.lock"))).toBe(false)
      for (const { read } of [held, serve]) expect(read("history.jsonl")).toBe(lines(1, 2, 3))
    }))

  it.effect("a compaction lock of another live process: the append is checked under the lock and lands once", () =>
    Effect.gen(function*() {
      const { file, memory, read } = yield* setup(true)
      const other = yield* sleeper
      fs.writeFileSync(file(".planckclaw-compact.lock"), `${other.pid}\n`)
      yield* memory.append(exchange(3), { exchange: "k3" })
      yield* memory.append(exchange(4), { exchange: "k4" })
      expect(read("history.jsonl")).toBe(lines(1, 2, 3, 4))
      // A live compaction's lock is its own to remove.
      expect(fs.existsSync(file(".planckclaw-compact.lock"))).toBe(true)
    }))

  it.effect("a compaction lock left by a dead process is cleared by the next append, which lands once", () =>
    Effect.gen(function*() {
      const { file, memory, read } = yield* setup(true)
      fs.writeFileSync(file(".planckclaw-compact.lock"), `${yield* deadPid}\n`)
      yield* memory.append(exchange(3), { exchange: "k3" })
      expect(fs.existsSync(file(".planckclaw-compact.lock"))).toBe(false)
      yield* memory.append(exchange(4), { exchange: "k4" })
      expect(read("history.jsonl")).toBe(lines(1, 2, 3, 4))
    }))

  it.effect("a history file met first by an append is counted then: the compaction check after it needs no lock", () =>
    Effect.gen(function*() {
      const { directory, file, memory } = yield* setup(true)
      const other = yield* sleeper
      fs.symlinkSync(String(other.pid), file(".planckclaw-write.lock"))
      // Four lines, counted by the appends themselves: no lock to wait for (another process holds it).
      expect(yield* memory.hasMoreLinesThan(3)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(4)).toBe(false)
      // Replaced by a new file (as a compaction does), met first by an append: counted whole then.
      fs.unlinkSync(file(".planckclaw-write.lock"))
      fs.rmSync(file("history.jsonl"))
      fs.writeFileSync(file("history.jsonl"), line("user", "kept").trimEnd())
      fs.rmSync(file(".history-ledger.json"))
      yield* memory.append(exchange(3), { exchange: "k3" })
      fs.symlinkSync(String(other.pid), file(".planckclaw-write.lock"))
      expect(fs.readFileSync(path.join(directory, "history.jsonl"), "utf8")).toBe(line("user", "kept") + lines(3))
      expect(yield* memory.hasMoreLinesThan(2)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(3)).toBe(false)
    }))

  it.effect("a compaction lock taken on a full disk (a link to the pid) is seen too: a dead owner's is cleared", () =>
    Effect.gen(function*() {
      const { file, memory, read } = yield* setup(true)
      fs.symlinkSync(String(yield* deadPid), file(".planckclaw-compact.lock"))
      yield* memory.append(exchange(3), { exchange: "k3" })
      expect(fs.existsSync(file(".planckclaw-compact.lock")) || isLink(file(".planckclaw-compact.lock"))).toBe(false)
      expect(read("history.jsonl")).toBe(lines(1, 2, 3))
    }))

  it.effect("a compaction of another process, committed between two appends or around one, loses no line", () =>
    Effect.gen(function*() {
      const { directory, memory, read } = yield* setup(true)
      // The other process's view of the same directory: its own MemoryDir, lock and flags.
      const other = yield* Memory.make(directory)
      const folds = FoldStore.make(other.memoryDir)
      for (const n of [3]) yield* memory.append(exchange(n), { exchange: `k${n}` })

      // Committed whole between two appends: history's new inode is seen before writing.
      const plan = Option.getOrThrow(yield* folds.exclusiveCompaction(folds.planFold(2)))
      yield* folds.exclusiveCompaction(folds.commitFold(plan, "first summary"))
      yield* memory.append(exchange(4), { exchange: "k4" })
      expect(read("history.jsonl")).toBe(lines(3, 4))

      // Begun before an append and committed after it: the lock file is seen after writing.
      yield* folds.exclusiveCompaction(Effect.gen(function*() {
        const next = Option.getOrThrow(yield* folds.planFold(2))
        yield* memory.append(exchange(5), { exchange: "k5" })
        yield* folds.commitFold(next, "second summary")
      }))
      yield* memory.append(exchange(6), { exchange: "k6" })
      expect(read("history.jsonl")).toBe(lines(4, 5, 6))
      expect(read("summary.md")).toBe("second summary\n")
      const snapshot = yield* memory.snapshot(10)
      expect(snapshot.history.map((entry) => entry.content)).toEqual(["q4", "a4", "q5", "a5", "q6", "a6"])
    }))
  it.effect("a compaction of another process that read before an append's write and committed right after it loses no line", () =>
    Effect.gen(function*() {
      const { file, memory, read } = yield* setup(true)
      yield* memory.append(exchange(3), { exchange: "k3" })
      // The other process, at the worst instants: its read of the kept tail just
      // before the run's write(2) of history, its renames and the release of its
      // compaction lock just after it, before the run looks for that lock.
      let interleaved = false
      yield* patchFs("writeSync", (real) =>
        ((fd: number, buffer: any, ...rest: Array<any>) => {
          if (interleaved || !Buffer.isBuffer(buffer) || !buffer.toString("utf8").includes("\"q4\"")) {
            return (real as any)(fd, buffer, ...rest)
          }
          interleaved = true
          const kept = fs.readFileSync(file("history.jsonl")).subarray(Buffer.byteLength(lines(1)))
          const wrote = (real as any)(fd, buffer, ...rest)
          fs.writeFileSync(file(".summary.md.next"), "folded q1\n")
          fs.writeFileSync(file(".history.jsonl.next"), kept)
          fs.renameSync(file(".summary.md.next"), file("summary.md"))
          fs.renameSync(file(".history.jsonl.next"), file("history.jsonl"))
          return wrote
        }) as typeof fs.writeSync)
      yield* memory.append(exchange(4), { exchange: "k4" })
      expect(interleaved).toBe(true)
      yield* memory.append(exchange(5), { exchange: "k5" })
      expect(read("history.jsonl")).toBe(lines(2, 3, 4, 5))
    }))
})

describe("the first append in a directory made just now", () => {
  const fresh = Effect.gen(function*() {
    const directory = yield* tempDir()
    yield* Effect.acquireRelease(Effect.sync(() => RunHeld.holdForRun(directory)), (release) => Effect.sync(release))
    const memory = yield* Memory.make(directory, { fresh: true })
    const file = (name: string) => path.join(directory, name)
    return { directory, memory, file, read: (name: string) => fs.readFileSync(file(name), "utf8") }
  })

  it.effect("makes history and ledger itself, without the write lock file, and the ledger names the exchange", () =>
    Effect.gen(function*() {
      const { directory, file, memory, read } = yield* fresh
      const other = yield* sleeper
      fs.symlinkSync(String(other.pid), file(".planckclaw-write.lock"))
      yield* memory.append(exchange(1), { exchange: "k1" })
      yield* memory.append(exchange(2), { exchange: "k2" })
      expect(read("history.jsonl")).toBe(lines(1, 2))
      const inode = fs.statSync(file("history.jsonl")).ino
      expect(read(".history-ledger.json").trim().split("\n").map((entry) => JSON.parse(entry))).toMatchObject([
        { inode, key: "k1" },
        { inode, key: "k2" }
      ])
      fs.rmSync(file(".planckclaw-write.lock"))
      // Read back by another store, the ledger holds k1: a replay of it writes nothing.
      const again = yield* Memory.make(directory)
      yield* again.append(exchange(1), { exchange: "k1" })
      expect(read("history.jsonl")).toBe(lines(1, 2))
    }))

  it.effect("with a ledger put there before it, makes history, then goes through the lock and names the exchange anew", () =>
    Effect.gen(function*() {
      const { directory, file, memory, read } = yield* fresh
      fs.writeFileSync(file(".history-ledger.json"), `${JSON.stringify({ inode: 1, exchanges: [{ key: "k1", start: 0, end: 10 }] })}\n`)
      yield* memory.append(exchange(1), { exchange: "k1" })
      expect(read("history.jsonl")).toBe(lines(1))
      const inode = fs.statSync(file("history.jsonl")).ino
      expect(JSON.parse(read(".history-ledger.json").trim().split("\n").at(-1)!)).toMatchObject({ inode })
      // Read back by another store: k1 is held, so a replay writes nothing.
      const again = yield* Memory.make(directory)
      yield* again.append(exchange(1), { exchange: "k1" })
      expect(read("history.jsonl")).toBe(lines(1))
    }))

  it.effect("with a history put there before it, goes through the write lock and after that history", () =>
    Effect.gen(function*() {
      const { file, memory, read } = yield* fresh
      fs.writeFileSync(file("history.jsonl"), line("user", "by hand"))
      yield* memory.append(exchange(1), { exchange: "k1" })
      expect(read("history.jsonl")).toBe(line("user", "by hand") + lines(1))
      expect(yield* memory.hasMoreLinesThan(2)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(3)).toBe(false)
    }))
})

/** Whether `file` is a symbolic link (existsSync follows it). */
const isLink = (file: string): boolean => fs.lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink() ?? false
