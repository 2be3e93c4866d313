/**
 * An agent released (PLANCKCLAW_AGENT_IDLE) while its background compaction
 * still waits on the brain: a message after the release must not start a
 * second instance beside that compaction (which took over the write lock,
 * removed the compaction's staged files and lost the exchanges appended
 * meanwhile). The release waits for the compaction; the next message is
 * answered after it, and every exchange is in history or summary.
 * And an agent whose caller went away mid-turn (a client disconnected) is
 * not idle: it is released after the turn, not in the middle of it.
 * TestClock: the idle time passes by the test's hand, the summary by a latch.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import { yieldToEventLoop } from "../../support/TestClockWait.js"
import { captureLogs } from "../../support/LogCapture.js"
import { echoBrain, historyOf, isCompaction, lastUserText, startHost, tempDir } from "./Kit.js"

/** Lets every fiber (and the event loop) run as far as it can without time passing. */
const settle = Effect.gen(function*() {
  for (let round = 0; round < 50; round++) {
    yield* Effect.yieldNow
    yield* yieldToEventLoop
  }
})

/** A brain whose summary requests wait for `release`: the compaction is slow, the turns are not. */
const slowSummaries = Effect.gen(function*() {
  const asked = yield* Deferred.make<void>()
  const release = yield* Deferred.make<void>()
  const folded: Array<string> = []
  const brain = echoBrain((request) =>
    isCompaction(request)
      ? Effect.sync(() => folded.push(lastUserText(request))).pipe(
        Effect.andThen(Deferred.succeed(asked, undefined)),
        Effect.andThen(Deferred.await(release)),
        Effect.as(ScriptedBrain.text("a summary"))
      )
      : undefined
  )
  return { brain, asked, release, folded }
})

describe("AgentHost: released while compacting", () => {
  it.effect("a message after the release waits for the compaction; nothing is lost, nothing is taken over (TestClock)", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      yield* Effect.gen(function*() {
        const root = tempDir()
        const { asked, brain, folded, release } = yield* slowSummaries
        const agents = yield* startHost(root, brain.layer, {
          PLANCKCLAW_AGENT_IDLE: "60",
          HISTORY_MAX: "4",
          HISTORY_KEEP: "2"
        })
        // Should an assertion fail, the summary is let go first: the host's close waits for its compaction.
        yield* Effect.addFinalizer(() => Deferred.succeed(release, undefined))
        // Three exchanges: six lines, over HISTORY_MAX: a compaction starts in the background.
        for (const text of ["a", "b", "c"]) yield* agents.send("busy", { text })
        yield* Deferred.await(asked)
        // Idle for longer than PLANCKCLAW_AGENT_IDLE: the agent is released while its summary is still asked.
        yield* TestClock.adjust("61 seconds")
        yield* settle
        const later = yield* Effect.forkChild(agents.send("busy", { text: "d" }))
        yield* settle
        // Its turn waits for the compaction the release waits for: no second instance beside it.
        expect(later.pollUnsafe()).toBeUndefined()
        yield* Deferred.succeed(release, undefined)
        expect(yield* Fiber.join(later)).toEqual({ reply: "echo d", stored: true })
        yield* settle

        const directory = path.join(root, "agents", "busy")
        expect(folded.length).toBeGreaterThanOrEqual(1)
        expect(fs.readFileSync(path.join(directory, "summary.md"), "utf8")).toBe("a summary\n")
        // Folded: a, echo a, b, echo b (the four older than the last two); kept: c, echo c; then d.
        expect(folded[0]).toContain("echo b")
        expect(historyOf(root, "busy").map((line) => line.content)).toEqual(["c", "echo c", "d", "echo d"])
        expect(fs.readdirSync(directory).filter((name) => name.endsWith(".next"))).toEqual([])
        expect(logs.lines.filter((line) => /compaction did not run|ENOENT/.test(line))).toEqual([])
      }).pipe(Effect.provide(logs.layer))
    }).pipe(Effect.scoped))
})

describe("AgentHost: released only when idle", () => {
  it.effect("a caller gone mid-turn does not let the agent go idle: the turn ends and is kept, the release comes after it (TestClock)", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const asked = yield* Deferred.make<void>()
      const answer = yield* Deferred.make<void>()
      const brain = echoBrain((request) =>
        lastUserText(request) === "slow"
          ? Deferred.succeed(asked, undefined).pipe(Effect.andThen(Deferred.await(answer)), Effect.as(ScriptedBrain.text("echo slow")))
          : undefined
      )
      const agents = yield* startHost(root, brain.layer, { PLANCKCLAW_AGENT_IDLE: "60" })
      yield* Effect.addFinalizer(() => Deferred.succeed(answer, undefined))
      // A client that went away (its request interrupted) once the message was taken and its turn began.
      const caller = yield* Effect.forkChild(agents.send("patient", { text: "slow", idempotencyKey: "k-1" }))
      yield* Deferred.await(asked)
      yield* Fiber.interrupt(caller)
      yield* settle
      // Longer than PLANCKCLAW_AGENT_IDLE with the turn still on: the agent is not idle, and stays.
      yield* TestClock.adjust("61 seconds")
      yield* settle
      expect((yield* agents.get("patient")).state).toBe("running")
      yield* Deferred.succeed(answer, undefined)
      yield* settle
      expect(historyOf(root, "patient").map((line) => line.content)).toEqual(["slow", "echo slow"])
      expect(fs.readFileSync(path.join(root, "agents", "patient", ".inbox.jsonl"), "utf8")).toBe("")
      // The retry under its key gets the reply kept, without a second turn.
      expect(yield* agents.send("patient", { text: "slow", idempotencyKey: "k-1" })).toEqual({ reply: "echo slow", stored: true })
      expect(brain.requests).toHaveLength(1)
      // Idle from then on: released after its idle time.
      yield* TestClock.adjust("61 seconds")
      yield* settle
      expect((yield* agents.get("patient")).state).toBe("released")
    }).pipe(Effect.scoped))
})
