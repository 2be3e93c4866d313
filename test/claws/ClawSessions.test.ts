/**
 * A claw is killed whole: its session, not only its process group, so a job
 * that made a group of its own (GNU `timeout`) goes with it. What it left
 * outside its session (setsid) may keep its output open: the call answers
 * with what it printed a grace after its exit.
 */
import * as Path from "node:path"
import { describe, expect } from "@effect/vitest"
import { it } from "../support/ProcessServices.js"
import { Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as Scripts from "../../src/claws/ScriptClaws.js"
import { captureLogs } from "../support/LogCapture.js"
import * as Sandbox from "../support/Sandbox.js"
import { declaring, settings, writeSettled } from "./ClawKit.js"

const tempDir = Sandbox.tempDir("planckclaw-claw-sessions-")

/** The pid written in `file`; SIGKILLed at the end of the test should it outlive it. */
const pidToReap = (file: string) =>
  Effect.gen(function*() {
    const pid = yield* Sandbox.pidIn(file).pipe(TestClock.withLive)
    yield* Effect.addFinalizer(() => Effect.sync(() => Sandbox.isRunning(pid) && process.kill(pid, "SIGKILL")))
    return pid
  })

describe("Script claws: a claw's session", () => {
  it.effect("a timed-out claw running `timeout 100 sleep 77` leaves nothing running", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const work = yield* tempDir
      const inner = Path.join(work, "inner")
      yield* writeSettled(dir, "slow.sh", `${declaring("slow")}timeout 100 sh -c 'echo $$ > ${inner}; exec sleep 77'; echo x\n`)
      const claws = yield* Scripts.make({ ...settings(dir), timeout: Duration.seconds(2) })
      const fiber = yield* Effect.forkChild(claws.call("slow", {}))
      const sleeping = yield* pidToReap(inner)
      yield* TestClock.adjust("2 seconds")
      expect(yield* Fiber.join(fiber)).toEqual({ content: "Tool slow timed out after 2s", isError: true })
      yield* Sandbox.exited("timeout's command", sleeping).pipe(TestClock.withLive)
    }))

  it.effect("a claw whose setsid child keeps its stdout open answers with what it printed, not a timeout", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const work = yield* tempDir
      const holder = Path.join(work, "holder")
      const logs = yield* captureLogs
      yield* writeSettled(
        dir,
        "daemon.sh",
        `${declaring("daemon")}setsid sh -c 'echo $$ > ${holder}; exec sleep 1000' &\n` +
          `until [ -s ${holder} ]; do sleep 0.01; done; echo printed-before-exit\n`
      )
      const claws = yield* Scripts.make(settings(dir))
      const fiber = yield* Effect.forkChild(claws.call("daemon", {}).pipe(Effect.provide(logs.layer)))
      const daemon = yield* pidToReap(holder)
      // The claw's 30 s are on the TestClock, never advanced; the helper's grace is real.
      expect(yield* Fiber.join(fiber).pipe(Sandbox.within("the call to end"), TestClock.withLive)).toEqual({
        content: "printed-before-exit",
        isError: false
      })
      expect(logs.lines).toHaveLength(1)
      expect(logs.lines[0]).toMatch(/^WARN .*daemon\.sh exited, but a process outside its session .* still held its output open/)
      expect(Sandbox.isRunning(daemon)).toBe(true)
    }).pipe(
      // The TestClock's own warning (time used, clock not moved) would join the logs after its 1 s default: not here.
      Effect.provide(TestClock.layer({ warningDelay: Sandbox.defaultBound }))
    ))
})
