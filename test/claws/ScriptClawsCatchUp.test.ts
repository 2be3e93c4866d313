/**
 * What the catch-up (letting pending inotify events in before a scan) is
 * paid for: once per list, never again for the tool calls of the turn that
 * listed, whose scan still sees every change the watch reported since.
 * Counted with a catch-up that tallies its uses and then waits as the real one.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { execFileSync } from "node:child_process"
import { describe, expect } from "@effect/vitest"
import { it } from "../support/ProcessServices.js"
import { Effect, Fiber, Scheduler } from "effect"
import { vi } from "vitest"
import * as Scripts from "../../src/claws/ScriptClaws.js"
import * as Sandbox from "../support/Sandbox.js"
import { settings, writeSettled as writeOld } from "./ClawKit.js"

const tempDir = Sandbox.tempDir("planckclaw-catchup-")

/** ScriptClaws's waits, each counted. */
const countingCatchUps = () => {
  const count = { list: 0, request: 0 }
  const counted = (key: keyof typeof count, wait: Effect.Effect<void>) =>
    Effect.andThen(Effect.sync(() => void count[key]++), wait)
  const catchUps: Scripts.CatchUps = {
    list: counted("list", Scripts.makeCatchUp(2)),
    request: counted("request", Scripts.makeCatchUp(1))
  }
  return { count, catchUps }
}

describe("Script claws: the catch-up before a scan", () => {
  it.effect("a list waits once; the turn's tool calls do not wait again", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeOld(dir, "echo.sh", `#!/bin/sh\n#TOOLS:{"name":"say","description":"d"}\necho said\n`)
      const { catchUps, count } = countingCatchUps()
      const claws = yield* Scripts.makeWatched(settings(dir), undefined, catchUps)
      // The first list starts the watch (and stats every claw): nothing to catch up with yet.
      expect((yield* claws.list).tools.map((t) => t.name)).toEqual(["say"])
      expect(count).toEqual({ list: 0, request: 0 })
      expect((yield* claws.list).tools.map((t) => t.name)).toEqual(["say"])
      expect(count).toEqual({ list: 1, request: 0 })
      expect(yield* claws.call("say", {})).toEqual({ content: "said", isError: false })
      expect(yield* claws.call("say", {})).toEqual({ content: "said", isError: false })
      expect(count).toEqual({ list: 1, request: 0 })
    }))

  it.effect("a call still sees a claw added after the list, once its event is in", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeOld(dir, "a.sh", `#!/bin/sh\n#TOOLS:{"name":"first","description":"d"}\necho a\n`)
      const claws = yield* Scripts.makeWatched(settings(dir))
      expect((yield* claws.list).tools.map((t) => t.name)).toEqual(["first"])
      yield* writeOld(dir, "b.sh", `#!/bin/sh\n#TOOLS:{"name":"second","description":"d"}\necho b\n`)
      // The next list lets the event in; the call after it finds the new claw.
      expect((yield* claws.list).tools.map((t) => t.name)).toEqual(["first", "second"])
      expect(yield* claws.call("second", {})).toEqual({ content: "b", isError: false })
      // A claw removed: the call's own scan (a stat of the directory) sees it gone.
      yield* Effect.sync(() => Fs.rmSync(Path.join(dir, "b.sh")))
      expect(yield* claws.call("second", {})).toEqual({ content: "Unknown tool: second", isError: true })
    }))

  /**
   * Effect 4's scheduler dispatches through setImmediate too: while counting,
   * it runs on the one from before the spy, so only the catch-up's are counted.
   */
  const unspied = globalThis.setImmediate
  const scheduler = new Scheduler.MixedScheduler("async", (task) => {
    const handle = unspied(task)
    return () => clearImmediate(handle)
  })

  /** Counts the setImmediate calls `body` makes. */
  const immediatesOf = <A>(body: Effect.Effect<A>) =>
    Effect.acquireUseRelease(
      Effect.sync(() => vi.spyOn(globalThis, "setImmediate")),
      (immediates) => Effect.map(body, () => immediates.mock.calls.length),
      (immediates) => Effect.sync(() => immediates.mockRestore())
    ).pipe(Effect.provideService(Scheduler.Scheduler, scheduler))

  for (const turns of [1, 2] as const) {
    it.effect(`${turns}-turn waits begun together share one catch-up: ${turns} setImmediate for ten`, () =>
      Effect.gen(function*() {
        const catchUp = Scripts.makeCatchUp(turns)
        const calls = yield* immediatesOf(
          Effect.flatMap(Effect.forEach(Array.from({ length: 10 }), () => Effect.forkChild(catchUp)), (fibers) => Effect.forEach(fibers, Fiber.join))
        )
        expect(calls).toBe(turns)
      }))
  }

  it.effect("a wait begun after a catch-up's first turn has run starts another (it must see a later poll)", () =>
    Effect.gen(function*() {
      const catchUp = Scripts.makeCatchUp(2)
      const calls = yield* immediatesOf(Effect.gen(function*() {
        yield* catchUp
        const late = yield* Effect.callback<Fiber.Fiber<void>>((resume) => {
          setImmediate(() => resume(Effect.forkChild(catchUp)))
        })
        yield* Fiber.join(late)
      }))
      // Two for the first wait, one to begin the late one from a loop turn, two for the late one.
      expect(calls).toBe(5)
    }))

  it.effect("lists begun together each see an edit another process finished before they began", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeOld(dir, "old.sh", `#!/bin/sh\n#TOOLS:{"name":"before","description":"d"}\n`)
      const claws = yield* Scripts.makeWatched(settings(dir))
      expect((yield* claws.list).tools.map((t) => t.name)).toEqual(["before"])
      expect((yield* claws.list).tools.map((t) => t.name)).toEqual(["before"])
      // The child has exited when execFileSync returns: its write is done, its event maybe not yet read.
      execFileSync("/bin/sh", ["-c", `printf '#!/bin/sh\\n%s\\n' '#TOOLS:{"name":"after","description":"d"}' > old.sh`], { cwd: dir })
      const lists = yield* Effect.forEach(Array.from({ length: 5 }), () => Effect.forkChild(claws.list))
      for (const fiber of lists) expect((yield* Fiber.join(fiber)).tools.map((t) => t.name)).toEqual(["after"])
    }))
})
