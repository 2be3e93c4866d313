/**
 * A run's compaction commit does not hold its appends back across the
 * commit's fsyncs: an exchange appended while the commit waits on the
 * thread pool lands at once, in the old history and, copied, in the next
 * one, so the commit keeps it and the ledger still knows it. A copy that
 * fails abandons the commit (the journal goes first) and loses nothing.
 * Without the run lock (an agent of serve) the commit holds appends back
 * as before.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import fsModule from "node:fs"
import { syncBuiltinESMExports } from "node:module"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option } from "effect"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import * as RunHeld from "../../src/memory/RunHeld.js"
import * as TurnGate from "../../src/memory/TurnGate.js"
import { heldTurn } from "../support/HeldTurn.js"
import { tempDir } from "../support/Sandbox.js"
import { yieldToEventLoop } from "../support/TestClockWait.js"

const line = (role: "user" | "assistant", content: string) => `${JSON.stringify({ role, content })}\n`
const exchange = (n: number) => [{ role: "user" as const, content: `q${n}` }, { role: "assistant" as const, content: `a${n}` }]
const lines = (...ns: ReadonlyArray<number>) => ns.map((n) => line("user", `q${n}`) + line("assistant", `a${n}`)).join("")

const setup = (heldByRun: boolean) =>
  Effect.gen(function*() {
    const directory = yield* tempDir()
    if (heldByRun) yield* Effect.acquireRelease(Effect.sync(() => RunHeld.holdForRun(directory)), (release) => Effect.sync(release))
    const memory = yield* Memory.make(directory)
    const folds = FoldStore.make(memory.memoryDir)
    for (let n = 1; n <= 4; n++) yield* memory.append(exchange(n), { exchange: `k${n}` })
    const read = (name: string) => fs.readFileSync(path.join(directory, name), "utf8")
    const exists = (name: string) => fs.existsSync(path.join(directory, name))
    // The commit of a fold keeping the last two exchanges, forked: it has begun once its mirror is in place.
    const commitForked = Effect.gen(function*() {
      const plan = Option.getOrThrow(yield* folds.planFold(4))
      return yield* Effect.forkChild(folds.commitFold(plan, "the summary"))
    })
    const commitGated = (gate: TurnGate.TurnGate) =>
      Effect.gen(function*() {
        const plan = Option.getOrThrow(yield* folds.planFold(4))
        return yield* Effect.forkChild(folds.commitFold(plan, "the summary", gate.step))
      })
    const mirrorInstalled = Effect.suspend(() => Effect.succeed(memory.memoryDir.mirror?.() !== undefined))
    return { directory, memory, folds, read, exists, commitForked, commitGated, mirrorInstalled }
  })

/** The pid of a process that has exited: a write lock naming it is taken over (and removed) by the next locked section. */
const deadPid = Effect.callback<number>((resume) => {
  const gone = child.spawn("true", [], { stdio: "ignore" })
  gone.once("exit", () => resume(Effect.succeed(gone.pid!)))
})

/** Yields until `ready` holds (no clock involved: the commit's steps run between yields). */
const until = (ready: Effect.Effect<boolean>, pass: Effect.Effect<void> = Effect.yieldNow): Effect.Effect<void> =>
  Effect.flatMap(ready, (done) => done ? Effect.void : Effect.andThen(pass, until(ready, pass)))

/** Lets the event loop run until `ready` holds (for what only a pass brings: an fsync's answer, the TurnGate's setImmediate). */
const untilPassed = (ready: Effect.Effect<boolean>) => until(ready, yieldToEventLoop)

/**
 * fsync(2) as the test says: while `holding(fd)` is true, a call waits
 * until `release`, so the test, not the thread pool, decides when the
 * commit's fsyncs answer. `answered` counts the released calls that have
 * called back. Put back at the end of the scope, anything held let go.
 */
const fsyncsHeld = Effect.acquireRelease(
  Effect.sync(() => {
    const realFsync = fsModule.fsync
    const state = {
      holding: (_fd: number) => false,
      held: [] as Array<() => void>,
      released: 0,
      answered: 0,
      release: () => {
        state.holding = () => false
        const held = state.held.splice(0)
        state.released += held.length
        for (const go of held) go()
      },
      realFsync
    }
    fsModule.fsync = ((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
      if (!state.holding(fd)) return realFsync(fd, callback)
      state.held.push(() =>
        realFsync(fd, (error) => {
          state.answered++
          callback(error)
        })
      )
    }) as typeof fsModule.fsync
    syncBuiltinESMExports()
    return state
  }),
  (state) =>
    Effect.sync(() => {
      fsModule.fsync = state.realFsync
      syncBuiltinESMExports()
      state.release()
    })
)

describe("a run's compaction commit alongside its appends", () => {
  it.effect("an exchange appended while the commit waits for its fsyncs lands before the commit ends, and the commit keeps it; reads do not wait either", () =>
    Effect.gen(function*() {
      const h = yield* setup(true)
      // The commit's fsyncs answer only once the appends and reads below have returned.
      const fsyncs = yield* fsyncsHeld
      fsyncs.holding = () => true
      const commit = yield* h.commitForked
      yield* until(h.mirrorInstalled)
      yield* h.memory.append(exchange(5), { exchange: "k5" })
      yield* h.memory.append(exchange(6), { exchange: "k6" })
      // A turn's read of memory (its first: not cached) and line count do not wait for the commit either.
      const during = yield* h.memory.snapshot(4)
      expect(during.history.map((entry) => entry.content)).toEqual(["q5", "a5", "q6", "a6"])
      expect(yield* h.memory.hasMoreLinesThan(11)).toBe(true)
      // All of it returned while the commit still waits on the thread pool.
      expect(commit.pollUnsafe()).toBeUndefined()
      expect(h.read("history.jsonl")).toBe(lines(1, 2, 3, 4, 5, 6))
      fsyncs.release()
      const result = yield* Fiber.join(commit)
      expect(result.kept).toBe(8)
      expect(h.read("summary.md")).toBe("the summary\n")
      expect(h.read("history.jsonl")).toBe(lines(3, 4, 5, 6))
      expect(h.exists(".compaction-commit") || h.exists(".history.jsonl.next") || h.exists(".history-ledger.json.next")).toBe(false)
      // The ledger moved with the copies: k5 replayed is already stored, k1 was folded, k7 is new.
      yield* h.memory.append(exchange(5), { exchange: "k5" })
      yield* h.memory.append(exchange(1), { exchange: "k1" })
      yield* h.memory.append(exchange(7), { exchange: "k7" })
      expect(h.read("history.jsonl")).toBe(lines(3, 4, 5, 6, 7))
    }))

  it.effect("a copy that fails abandons the commit: journal and next files go, and history keeps every line", () =>
    Effect.gen(function*() {
      const h = yield* setup(true)
      const commit = yield* h.commitForked
      yield* until(h.mirrorInstalled)
      const mirror = h.memory.memoryDir.mirror?.()
      // The mirror made to expect other bytes than the next append's: that copy is refused.
      mirror!.historyEnd += 1
      yield* h.memory.append(exchange(5), { exchange: "k5" })
      const exit = yield* Fiber.await(commit)
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain("could not be copied")
      expect(h.read("history.jsonl")).toBe(lines(1, 2, 3, 4, 5))
      expect(h.exists("summary.md")).toBe(false)
      for (const leftover of [".compaction-commit", ".summary.md.next", ".history.jsonl.next", ".history-ledger.json.next"]) {
        expect(h.exists(leftover)).toBe(false)
      }
      // Nothing is stored twice afterwards, and the next compaction commits.
      yield* h.memory.append(exchange(5), { exchange: "k5" })
      yield* h.memory.append(exchange(6), { exchange: "k6" })
      expect(h.read("history.jsonl")).toBe(lines(1, 2, 3, 4, 5, 6))
      const again = yield* Fiber.join(yield* h.commitForked)
      expect(again.kept).toBe(4)
      expect(h.read("history.jsonl")).toBe(lines(5, 6))
    }))

  it.effect("a summary.md edited by hand after the plan is kept: the commit is refused, its next files go, history is as it was", () =>
    Effect.gen(function*() {
      const h = yield* setup(true)
      const plan = Option.getOrThrow(yield* h.folds.planFold(4))
      fs.writeFileSync(path.join(h.directory, "summary.md"), "Written by hand.\n")
      const refused = yield* Effect.flip(h.folds.commitFold(plan, "the summary"))
      expect(refused.message).toBe("summary.md was changed during compaction; nothing changed")
      expect(h.read("summary.md")).toBe("Written by hand.\n")
      expect(h.read("history.jsonl")).toBe(lines(1, 2, 3, 4))
      for (const leftover of [".compaction-commit", ".summary.md.next", ".history.jsonl.next", ".history-ledger.json.next"]) {
        expect(h.exists(leftover)).toBe(false)
      }
    }))

  it.effect("without the run lock the commit holds appends back until it has committed", () =>
    Effect.gen(function*() {
      const h = yield* setup(false)
      const commit = yield* h.commitForked
      // The lock is a symbolic link to our pid: lstat, not exists (which follows it).
      yield* until(Effect.sync(() => fs.lstatSync(path.join(h.directory, ".planckclaw-write.lock"), { throwIfNoEntry: false }) !== undefined))
      expect(h.memory.memoryDir.mirror?.()).toBeUndefined()
      yield* h.memory.append(exchange(5), { exchange: "k5" })
      // The append waited for the commit: it went to the new history.
      expect(h.read("history.jsonl")).toBe(lines(3, 4, 5))
      expect((yield* Fiber.join(commit)).kept).toBe(4)
    }))

  it.effect("the commit's last directory fsync comes after the write lock is let go: an append after the swap does not wait for it", () =>
    Effect.gen(function*() {
      const h = yield* setup(true)
      // Directory fsyncs once history is swapped are held until the test lets them go.
      const swapped = () => h.read("history.jsonl") === lines(3, 4) && !h.exists(".compaction-commit")
      const fsyncs = yield* fsyncsHeld
      fsyncs.holding = (fd) => fs.fstatSync(fd).isDirectory() && swapped()
      const commit = yield* h.commitForked
      yield* until(Effect.sync(() => fsyncs.held.length > 0))
      // Swapped, its last fsync pending: the append goes to the new history at once.
      const append = yield* Effect.forkChild(h.memory.append(exchange(5), { exchange: "k5" }))
      yield* Effect.repeat(Effect.yieldNow, { times: 100 })
      const appended = append.pollUnsafe()
      fsyncs.release()
      expect(appended !== undefined && Exit.isSuccess(appended)).toBe(true)
      expect(h.read("history.jsonl")).toBe(lines(3, 4, 5))
      expect(commit.pollUnsafe()).toBeUndefined()
      expect((yield* Fiber.join(commit)).kept).toBe(4)
    }))

  it.effect("each step of the commit waits for the turn in flight: none is taken while a turn runs, and the commit still ends", () =>
    Effect.gen(function*() {
      const h = yield* setup(true)
      const fsyncs = yield* fsyncsHeld
      const gate = TurnGate.make()
      const first = yield* heldTurn(gate)
      const commit = yield* h.commitGated(gate)
      for (let pass = 0; pass < 3; pass++) yield* yieldToEventLoop
      // Not one file staged while the turn runs.
      expect(h.exists(".summary.md.next")).toBe(false)
      // The commit's fsyncs wait until the next turn has begun, so it cannot reach its journal before.
      fsyncs.holding = () => true
      yield* first.finish
      // The three files staged, then their fsyncs begun, each in a step of its own.
      yield* untilPassed(Effect.sync(() => fsyncs.held.length === 3))
      expect(h.exists(".history-ledger.json.next")).toBe(true)
      // Another turn begins with the commit under way, all three files staged: its appends go on,
      // and the commit does not reach its journal meanwhile.
      const second = yield* heldTurn(gate)
      fsyncs.release()
      yield* h.memory.append(exchange(5), { exchange: "k5" })
      // Passes enough for the commit to reach its journal were its step not held back: the
      // fsyncs' answers, then the journal's step.
      yield* untilPassed(Effect.sync(() => fsyncs.answered === fsyncs.released))
      for (let pass = 0; pass < 3; pass++) yield* yieldToEventLoop
      expect(fsyncs.released).toBe(3)
      expect(h.exists(".compaction-commit")).toBe(false)
      expect(h.read("history.jsonl")).toBe(lines(1, 2, 3, 4, 5))
      yield* second.finish
      expect((yield* Fiber.join(commit)).kept).toBe(6)
      expect(h.read("history.jsonl")).toBe(lines(3, 4, 5))
    }))

  it.effect("after the swap the run's store takes the new files as they are: the next snapshot and append take no lock, and the ledger moved with them", () =>
    Effect.gen(function*() {
      const h = yield* setup(true)
      // A window cached before the commit, as a turn leaves it: wider than the history the fold keeps.
      yield* h.memory.snapshot(8)
      const commit = yield* h.commitForked
      yield* until(h.mirrorInstalled)
      yield* h.memory.append(exchange(5), { exchange: "k5" })
      expect((yield* Fiber.join(commit)).kept).toBe(6)
      // A write lock left by a dead process: only a locked section would take it over (and remove it).
      const lock = path.join(h.directory, ".planckclaw-write.lock")
      const stale = String(yield* deadPid)
      fs.symlinkSync(stale, lock)
      const after = yield* h.memory.snapshot(8)
      expect(after.summary).toBe("the summary")
      expect(after.history.map((entry) => entry.content)).toEqual(["q3", "a3", "q4", "a4", "q5", "a5"])
      yield* h.memory.append(exchange(6), { exchange: "k6" })
      expect(yield* h.memory.hasMoreLinesThan(7)).toBe(true)
      expect(yield* h.memory.hasMoreLinesThan(8)).toBe(false)
      expect((yield* h.memory.snapshot(8)).history.map((entry) => entry.content)).toEqual(["q3", "a3", "q4", "a4", "q5", "a5", "q6", "a6"])
      expect(fs.readlinkSync(lock)).toBe(stale)
      expect(h.read("history.jsonl")).toBe(lines(3, 4, 5, 6))
      // The ledger it took names the copied exchange and the folded ones: replays are not stored twice.
      fs.unlinkSync(lock)
      yield* h.memory.append(exchange(5), { exchange: "k5" })
      yield* h.memory.append(exchange(1), { exchange: "k1" })
      yield* h.memory.append(exchange(6), { exchange: "k6" })
      yield* h.memory.append(exchange(7), { exchange: "k7" })
      expect(h.read("history.jsonl")).toBe(lines(3, 4, 5, 6, 7))
    }))

  it.effect("a turn's append that must take the lock the commit holds opens the gate meanwhile: the commit ends, then the append is checked once", () =>
    Effect.gen(function*() {
      const h = yield* setup(true)
      const gate = TurnGate.make()
      h.memory.memoryDir.openGateWhileLocked?.((effect) => gate.opened(effect))
      const commit = yield* h.commitGated(gate)
      yield* until(h.mirrorInstalled)
      // A replayed exchange: its key is in the ledger, so it is checked under the write lock, held by the commit.
      const replay = yield* Effect.forkChild(gate.turn(h.memory.append(exchange(4), { exchange: "k4" })))
      expect((yield* Fiber.join(commit)).kept).toBe(4)
      yield* Fiber.join(replay)
      expect(h.read("history.jsonl")).toBe(lines(3, 4))
    }))
})
