/**
 * The watchdog's net has no hole: a process group started through
 * `spawnGuarded` is killed when its starter is SIGKILLed at any instant, even
 * the one right after the group's process exists; a watchdog killed by
 * someone is replaced and takes over the list; a watchdog that cannot start
 * fails the spawn instead of leaving the group unguarded. The starter is
 * test/process/watchdog-harness.mjs around the built module.
 */
import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Sandbox from "../../support/Sandbox.js"

const harness = path.join(import.meta.dirname, "watchdog-harness.mjs")

/** The harness running SCENARIO in a fresh directory; killed (with whatever it left) when the scope closes. */
const start = (scenario: "die-at-spawn" | "no-watchdog" | "wait" | "own-group") =>
  Effect.gen(function*() {
    const dir = yield* Sandbox.tempDir("planckclaw-watchdog-")
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() => childProcess.spawn(process.execPath, [harness, scenario, dir], { stdio: "inherit" })),
      (proc) => Effect.sync(() => proc.kill("SIGKILL"))
    )
    const ended = Effect.callback<{ code: number | null; signal: string | null }>((resume) => {
      if (proc.exitCode !== null || proc.signalCode !== null) resume(Effect.succeed({ code: proc.exitCode, signal: proc.signalCode }))
      else proc.once("exit", (code, signal) => resume(Effect.succeed({ code, signal })))
    }).pipe(Sandbox.within("the harness to end"))
    const file = (name: string) => path.join(dir, name)
    return { proc, dir, file, ended }
  })

describe("Watchdog.spawnGuarded", () => {
  it.live("a starter SIGKILLed the instant the group exists: the command never runs, nothing is left", () =>
    Effect.gen(function*() {
      const { dir, ended, file } = yield* start("die-at-spawn")
      const spawned = yield* Sandbox.pidIn(file("spawned"))
      expect(yield* ended).toEqual({ code: null, signal: "SIGKILL" })
      yield* Sandbox.gone("the guarded group's process", spawned)
      expect(fs.existsSync(file("ran"))).toBe(false)
      expect(Sandbox.processesMentioning(dir)).toEqual([])
    }))

  it.live("a watchdog killed by someone is replaced at once, and the replacement kills the group", () =>
    Effect.gen(function*() {
      const { ended, file, proc } = yield* start("wait")
      const leader = yield* Sandbox.pidIn(file("ran"))
      const child = yield* Sandbox.pidIn(file("child"))
      const first = yield* Sandbox.eventually("the watchdog", () => Sandbox.childrenOf(proc.pid!, "groups=")[0])
      process.kill(first, "SIGKILL")
      yield* Sandbox.eventually("a new watchdog", () => Sandbox.childrenOf(proc.pid!, "groups=").find((pid) => pid !== first))
      proc.kill("SIGKILL")
      expect(yield* ended).toEqual({ code: null, signal: "SIGKILL" })
      // It ignores SIGTERM: the replacement's SIGKILL, two seconds on.
      yield* Sandbox.gone("the group's leader", leader)
      yield* Sandbox.gone("the leader's child", child)
    }))

  it.live("a starter SIGKILLed: a job that made a group of its own in the group's session goes too", () =>
    Effect.gen(function*() {
      const { ended, file, proc } = yield* start("own-group")
      const leader = yield* Sandbox.pidIn(file("ran"))
      const timeout = yield* Sandbox.pidIn(file("child"))
      const command = yield* Sandbox.pidIn(file("grandchild"))
      // Should the test fail, what it started must not outlive it.
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => [leader, timeout, command].forEach((pid) => Sandbox.isRunning(pid) && process.kill(pid, "SIGKILL")))
      )
      // timeout leads a group of its own.
      expect(Sandbox.groupGone(timeout)).toBe(false)
      proc.kill("SIGKILL")
      expect(yield* ended).toEqual({ code: null, signal: "SIGKILL" })
      yield* Sandbox.gone("the group's leader", leader)
      yield* Sandbox.gone("timeout, in a group of its own", timeout)
      yield* Sandbox.gone("timeout's command", command)
    }))

  it.live("no watchdog can start: the spawn fails saying so, and nothing runs unguarded", () =>
    Effect.gen(function*() {
      const { dir, ended, file } = yield* start("no-watchdog")
      expect(yield* ended).toEqual({ code: 0, signal: null })
      expect(fs.readFileSync(file("result"), "utf8")).toBe(
        "failed: no watchdog could be started to stop it should planckclaw be killed (spawn /bin/sh EAGAIN)"
      )
      expect(fs.existsSync(file("ran"))).toBe(false)
      expect(Sandbox.processesMentioning(dir)).toEqual([])
    }))
})
