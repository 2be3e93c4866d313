/**
 * What the spawn helper adds to ChildProcess.run (whose behaviour both share:
 * ChildProcess.test.ts runs its cases through each): the fork happens in the
 * helper, which holds no secret, keeps concurrent runs apart, and whose death
 * fails the runs it held without leaving their groups behind.
 */
import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect } from "@effect/vitest"
import { helperPid, it, runInHelper } from "../../support/ProcessServices.js"
import { Clock, Context, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as ChildProcess from "../../../src/runtime/process/ChildProcess.js"
import * as SpawnHelper from "../../../src/runtime/process/SpawnHelper.js"
import * as Sandbox from "../../support/Sandbox.js"
import { advanceTo } from "../../support/TestClockWait.js"

const repo = path.resolve(import.meta.dirname, "..", "..", "..")

const shell = (script: string): ChildProcess.RunRequest => ({
  command: "/bin/sh",
  args: ["-c", script],
  cwd: process.cwd(),
  env: { PATH: "/usr/bin:/bin" },
  stdoutMax: 1024,
  stderrMax: 1024,
  floodAllowance: 4096
})

/** An ES module program run by node in `cwd` until it exits by itself: its exit code and stdout. */
const nodeProgram = (script: string, cwd: string) =>
  Effect.callback<{ readonly code: number | null; readonly output: string }>((resume) => {
    const program = childProcess.spawn(process.execPath, ["--input-type=module", "-e", script], {
      cwd,
      stdio: ["ignore", "pipe", "inherit"]
    })
    let output = ""
    program.stdout.on("data", (chunk: Buffer) => output += chunk.toString())
    program.once("close", (code) => resume(Effect.succeed({ code, output })))
  }).pipe(Sandbox.within("the program to exit by itself"))

/**
 * Under `it.live` (no TestClock for Sandbox.settles to step around): waits
 * until no process of group `pgid` is left, failing the test past the bound.
 */
const groupGoes = (pgid: number) =>
  Sandbox.eventually(`process group ${pgid} to be gone`, () => Sandbox.groupGone(pgid) ? true : undefined)

const stdoutOf = (outcome: ChildProcess.RunOutcome) => Buffer.from(outcome.stdout).toString("utf8").trim()

describe("SpawnHelper.run", () => {
  it.effect("the command is the helper's child, not this process's", () =>
    Effect.gen(function*() {
      const parent = Number(stdoutOf(yield* runInHelper(shell("echo $PPID"))))
      expect(parent).toBe((yield* helperPid))
      expect(parent).not.toBe(process.pid)
    }))

  it.effect("the helper's own environment is PATH alone: no secret of this process reaches it", () =>
    Effect.gen(function*() {
      yield* runInHelper(shell("true"))
      const environ = fs.readFileSync(`/proc/${(yield* helperPid)}/environ`, "utf8")
      expect(environ.split("\0").filter((entry) => entry !== "")).toEqual(["PATH=/usr/bin:/bin"])
    }))

  it.effect("concurrent runs each get their own outcome", () =>
    Effect.gen(function*() {
      const outcomes = yield* Effect.forEach(
        [1, 2, 3, 4, 5],
        (n) => runInHelper(shell(`sleep 0.0${6 - n}; echo run-${n}; exit ${n}`)),
        { concurrency: "unbounded" }
      )
      expect(outcomes.map((outcome) => [stdoutOf(outcome), outcome.exitCode])).toEqual(
        [1, 2, 3, 4, 5].map((n) => [`run-${n}`, n])
      )
    }))

  it.live("a helper killed while a run waits: the run fails saying it was cut short and by what, its group goes, the next run gets a new helper", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-helper-")
      const pidFile = path.join(dir, "pid")
      const fiber = yield* Effect.forkChild(runInHelper(shell(`echo $$ > ${pidFile}; sleep 1000`)))
      const pgid = yield* Sandbox.pidIn(pidFile)
      const first = (yield* helperPid)!
      process.kill(first, "SIGKILL")
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
      const error = yield* Effect.flip(exit)
      // Not a SpawnError: the command had started.
      expect(error._tag).toBe("SpawnHelperDied")
      expect(error.message).toContain("the spawn helper ended (killed by SIGKILL)")
      expect(error._tag === "SpawnHelperDied" && error.ended).toBe("was killed by SIGKILL")
      // The helper's watchdog: SIGTERM to the group, SIGKILL two seconds on.
      yield* groupGoes(pgid)
      expect(stdoutOf(yield* runInHelper(shell("echo again")))).toBe("again")
      expect((yield* helperPid)).not.toBe(first)
    }))

  it.live("a run too large for the helper's line is refused here: the helper and the run it holds for another caller go on", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-helper-")
      const go = path.join(dir, "go")
      const pidFile = path.join(dir, "pid")
      // Another caller's run (in serve, another agent's claw), waiting for the file `go`.
      const other = yield* Effect.forkChild(runInHelper(shell(`echo $$ > ${pidFile}; while [ ! -e ${go} ]; do sleep 0.01; done; echo done`)))
      yield* Sandbox.pidIn(pidFile)
      const helper = (yield* helperPid)
      // A model's tool input of 17 MiB, as a claw's argument.
      const huge = yield* Effect.flip(runInHelper({ ...shell("echo never"), args: ["-c", "echo never", "q".repeat(17 * 1024 * 1024)] }))
      expect(huge.message).toMatch(/^cannot run \/bin\/sh: its arguments and environment take \d+ bytes, more than a run may pass \(16777216\)$/)
      fs.writeFileSync(go, "")
      expect(stdoutOf(yield* Fiber.join(other))).toBe("done")
      expect((yield* helperPid)).toBe(helper)
      expect(stdoutOf(yield* runInHelper(shell("echo after")))).toBe("after")
    }))

  it.live("a claw's private directory that a killed helper left is removed by the next helper", () =>
    Effect.gen(function*() {
      const parent = yield* Sandbox.tempDir("planckclaw-helper-tmp-")
      const dir = yield* Sandbox.tempDir("planckclaw-helper-")
      const pidFile = path.join(dir, "pid")
      const inPrivate = (script: string): ChildProcess.RunRequest => ({ ...shell(script), cwd: { privateIn: parent, prefix: "claw-" } })
      const fiber = yield* Effect.forkChild(runInHelper(inPrivate(`echo $$ > ${pidFile}; sleep 1000`)))
      const pgid = yield* Sandbox.pidIn(pidFile)
      const killed = (yield* helperPid)!
      process.kill(killed, "SIGKILL")
      yield* Fiber.await(fiber)
      yield* groupGoes(pgid)
      expect(fs.readdirSync(parent)).toEqual([expect.stringMatching(new RegExp(`^claw-${killed}-`))])
      const next = yield* runInHelper(inPrivate("pwd"))
      expect(fs.readdirSync(parent)).toEqual([])
      expect(path.basename(stdoutOf(next))).toMatch(new RegExp(`^claw-${(yield* helperPid)}-`))
    }))

  it.effect("a helper that does not answer a stop within 5 s is killed: the interruption ends, the group goes", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-helper-")
      const pidFile = path.join(dir, "pid")
      const fiber = yield* Effect.forkChild(runInHelper(shell(`echo $$ > ${pidFile}; sleep 1000`)))
      const pgid = yield* TestClock.withLive(Sandbox.pidIn(pidFile))
      const stuck = (yield* helperPid)!
      process.kill(stuck, "SIGSTOP")
      const interrupting = yield* Effect.forkChild(Fiber.interrupt(fiber))
      // The stop's bound is the only sleep: until it passes, the interruption waits.
      yield* advanceTo((yield* Clock.currentTimeMillis) + 5000)
      yield* Fiber.join(interrupting)
      yield* TestClock.withLive(Sandbox.gone("the stuck helper", stuck))
      // Sandbox.settles polls in real time already.
      expect(yield* Sandbox.settles(() => Sandbox.groupGone(pgid), "50 millis")).toBe(true)
    }))

  it.live("without the helper's program, runs go on from this process, warned once", () =>
    Effect.gen(function*() {
      // A copy of the built modules, in a package of its own whose dist/cli/ (the bundles, the helper's among them) is left out.
      const root = yield* Sandbox.tempDir("planckclaw-no-helper-")
      fs.cpSync(path.join(repo, "dist"), path.join(root, "dist"), {
        recursive: true,
        filter: (source) => source !== path.join(repo, "dist", "cli")
      })
      fs.writeFileSync(path.join(root, "package.json"), `{"type":"module"}`)
      fs.symlinkSync(path.join(repo, "node_modules"), path.join(root, "node_modules"))
      const script = [
        `import { Effect } from "effect"`,
        `import * as SpawnHelper from "./dist/runtime/process/SpawnHelper.js"`,
        `await Effect.runPromise(Effect.gen(function*() {`,
        `  const helper = yield* SpawnHelper.SpawnHelper`,
        `  for (const text of ["one", "two"]) {`,
        `    const outcome = yield* helper.run({ command: "/bin/sh", args: ["-c", "echo " + text + " $PPID"], cwd: "/",`,
        `      env: { PATH: "/usr/bin:/bin" }, stdoutMax: 100, stderrMax: 100, floodAllowance: 100 })`,
        `    process.stdout.write("ran " + Buffer.from(outcome.stdout).toString())`,
        `  }`,
        `  process.stdout.write("helper " + helper.helperPid() + " self " + process.pid + "\\n")`,
        `}).pipe(Effect.provide(SpawnHelper.layer)))`
      ].join("\n")
      const { code, output } = yield* nodeProgram(script, root)
      expect(code).toBe(0)
      const self = /self (\d+)/.exec(output)![1]
      expect(output).toContain(`ran one ${self}\n`)
      expect(output).toContain(`ran two ${self}\n`)
      expect(output).toContain(`helper undefined`)
      const warnings = output.split("\n").filter((line) => line.includes("claws are started from this process"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain(`its program ${path.join(root, "dist", "cli", "spawn-helper.cjs")} is missing`)
    }))

  it.live("a program whose last work was a run exits by itself, and its helper with it, though the helper's scope never closed", () =>
    Effect.gen(function*() {
      const script = [
        `import { Context, Effect, Layer, Scope } from "effect"`,
        `import * as SpawnHelper from ${JSON.stringify(path.join(repo, "dist/runtime/process/SpawnHelper.js"))}`,
        // A scope left open, as by a program that ends without closing it: only the process's end ends the helper.
        `const context = await Effect.runPromise(Layer.buildWithScope(SpawnHelper.layer, Scope.makeUnsafe()))`,
        `const helper = Context.get(context, SpawnHelper.SpawnHelper)`,
        `const outcome = await Effect.runPromise(helper.run({ command: "/bin/sh", args: ["-c", "echo done"], cwd: "/",`,
        `  env: { PATH: "/usr/bin:/bin" }, stdoutMax: 100, stderrMax: 100, floodAllowance: 100 }))`,
        `process.stdout.write(helper.helperPid() + " " + Buffer.from(outcome.stdout).toString())`
      ].join("\n")
      const { code, output } = yield* nodeProgram(script, repo)
      expect(code).toBe(0)
      const [helper, said] = output.split(" ")
      expect(said).toBe("done\n")
      yield* Sandbox.gone("its spawn helper", Number(helper))
    }))

  it.live("is ended with the scope it was built in: the helper exits, and the group it still ran goes", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-helper-")
      const pidFile = path.join(dir, "pid")
      // A scope of its own: Layer.fresh, or the test's own helper (the same layer) would be shared.
      const scope = yield* Scope.make()
      const helper = Context.get(yield* Layer.buildWithScope(Layer.fresh(SpawnHelper.layer), scope), SpawnHelper.SpawnHelper)
      expect(stdoutOf(yield* helper.run(shell("echo first")))).toBe("first")
      const pid = helper.helperPid()!
      // A run the scope's end finds still going (its fiber not interrupted first, as a command's are).
      yield* Effect.forkDetach(helper.run(shell(`echo $$ > ${pidFile}; sleep 1000`)))
      const pgid = yield* Sandbox.pidIn(pidFile)
      yield* Scope.close(scope, Exit.void)
      yield* Sandbox.gone("the spawn helper", pid)
      yield* groupGoes(pgid)
      expect(helper.helperPid()).toBeUndefined()
    }))
})
