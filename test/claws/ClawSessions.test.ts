/**
 * A claw is killed whole: its session, not only its process group, so a job
 * that made a group of its own (GNU `timeout`) goes with it.
 */
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock, TestServices } from "effect"
import * as Scripts from "../../src/claws/ScriptClaws.js"
import * as Sandbox from "../support/Sandbox.js"
import { declaring, settings, writeSettled } from "./ClawKit.js"

const tempDir = Sandbox.tempDir("planckclaw-claw-sessions-")

/** The pid written in `file`; SIGKILLed at the end of the test should it outlive it. */
const pidToReap = (file: string) =>
  Effect.gen(function*() {
    const pid = yield* Sandbox.pidIn(file).pipe(TestServices.provideLive)
    yield* Effect.addFinalizer(() => Effect.sync(() => Sandbox.isRunning(pid) && process.kill(pid, "SIGKILL")))
    return pid
  })

describe("Script claws: a claw's session", () => {
  it.scoped("a timed-out claw running `timeout 100 sleep 77` leaves nothing running", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const work = yield* tempDir
      const inner = Path.join(work, "inner")
      yield* writeSettled(dir, "slow.sh", `${declaring("slow")}timeout 100 sh -c 'echo $$ > ${inner}; exec sleep 77'; echo x\n`)
      const claws = yield* Scripts.make({ ...settings(dir), timeout: Duration.seconds(2) })
      const fiber = yield* Effect.fork(claws.call("slow", {}))
      const sleeping = yield* pidToReap(inner)
      yield* TestClock.adjust("2 seconds")
      expect(yield* Fiber.join(fiber)).toEqual({ content: "Tool slow timed out after 2s", isError: true })
      yield* Sandbox.exited("timeout's command", sleeping).pipe(TestServices.provideLive)
    }))
})
