/**
 * A run's other locks on its memory directory (the write lock, the
 * compaction lock) are hard links to its run lock, which names it: link(2)
 * makes no inode, where a symbolic link or a new file makes one. Without a
 * run lock of its own (removed by hand, or a process that holds none) they
 * are symbolic links naming the pid, as before.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Result, Option } from "effect"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { hold, runLockName } from "../../src/memory/MemoryHold.js"
import { tempDir } from "../support/Sandbox.js"

const exchange = (n: number) => [{ role: "user" as const, content: `q${n}` }, { role: "assistant" as const, content: `a${n}` }]

/** The pid of a process that has exited: a lock naming it is stale. */
const deadPid = Effect.callback<number>((resume) => {
  const gone = child.spawn("true", [], { stdio: "ignore" })
  gone.once("exit", () => resume(Effect.succeed(gone.pid!)))
})

/** A memory directory held as `planckclaw run` holds it, with its history store and fold store. */
const heldRun = Effect.gen(function*() {
  const directory = yield* tempDir()
  yield* hold.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["PLANCKCLAW_DIR", directory]])), { preserveEmptyStrings: true })))
  const memory = yield* Memory.make(directory)
  const folds = FoldStore.make(memory.memoryDir)
  const file = (name: string) => path.join(directory, name)
  return { directory, memory, folds, file }
})

const inode = (file: string) => fs.lstatSync(file).ino

describe("a run's locks as links to its run lock", () => {
  it.effect("the compaction lock and the write lock are the run lock's inode while held, and go when released", () =>
    Effect.gen(function*() {
      const { file, folds, memory } = yield* heldRun
      const runLock = inode(file(runLockName))
      yield* memory.append(exchange(1), { exchange: "k1" })
      const compactionLock = yield* folds.exclusiveCompaction(Effect.sync(() => fs.lstatSync(file(".planckclaw-compact.lock"))))
      expect(compactionLock.ino).toBe(runLock)
      expect(compactionLock.isFile()).toBe(true)
      const writeLock = yield* memory.memoryDir.locked("checking", () => Result.succeed(inode(file(".planckclaw-write.lock"))))
      expect(writeLock).toBe(runLock)
      // Released: the links go, the run lock stays, naming this process.
      for (const lock of [".planckclaw-compact.lock", ".planckclaw-write.lock"]) {
        expect(fs.lstatSync(file(lock), { throwIfNoEntry: false })).toBeUndefined()
      }
      expect(fs.readFileSync(file(runLockName), "utf8")).toBe(`${process.pid}\n`)
      expect(fs.lstatSync(file(runLockName)).nlink).toBe(1)
    }))

  it.effect("a compaction lock linked to a killed run's lock names a dead pid: the next compaction takes it over", () =>
    Effect.gen(function*() {
      const { file, folds } = yield* heldRun
      // What a run killed while compacting leaves: its run lock, and the compaction lock linked to it.
      const killedRunLock = file(".killed-run.lock")
      fs.writeFileSync(killedRunLock, `${yield* deadPid}\n`)
      fs.linkSync(killedRunLock, file(".planckclaw-compact.lock"))
      const during = yield* folds.exclusiveCompaction(Effect.sync(() => inode(file(".planckclaw-compact.lock"))))
      expect(during).toBe(inode(file(runLockName)))
      expect(fs.lstatSync(file(".planckclaw-compact.lock"), { throwIfNoEntry: false })).toBeUndefined()
    }))

  it.effect("with its run lock removed by hand, the run's compaction lock is a symbolic link naming it, and the fold commits", () =>
    Effect.gen(function*() {
      const { file, folds, memory } = yield* heldRun
      for (let n = 1; n <= 4; n++) yield* memory.append(exchange(n), { exchange: `k${n}` })
      fs.unlinkSync(file(runLockName))
      const committed = yield* folds.exclusiveCompaction(Effect.gen(function*() {
        expect(fs.readlinkSync(file(".planckclaw-compact.lock"))).toBe(String(process.pid))
        const plan = yield* folds.planFold(2)
        expect(Option.isSome(plan)).toBe(true)
        return yield* folds.commitFold(Option.getOrThrow(plan), "the summary")
      }))
      // Two lines kept: the last exchange.
      expect(committed.kept).toBe(2)
      expect(fs.readFileSync(file("summary.md"), "utf8")).toBe("the summary\n")
    }))
})
