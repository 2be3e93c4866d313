import * as childProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect } from "@effect/vitest"
import { it, type ProcessServices, runInHelper } from "../../support/ProcessServices.js"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as ChildProcess from "../../../src/runtime/process/ChildProcess.js"
import type { SpawnHelperDied } from "../../../src/runtime/process/SpawnHelper.js"
import { captureLogs } from "../../support/LogCapture.js"
import * as Sandbox from "../../support/Sandbox.js"
import { awaitPendingSleep } from "../../support/TestClockWait.js"

const tempDir = Sandbox.tempDir("planckclaw-child-")

const shell = (script: string, overrides: Partial<ChildProcess.RunRequest> = {}): ChildProcess.RunRequest => ({
  command: "/bin/sh",
  args: ["-c", script],
  cwd: process.cwd(),
  env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
  stdoutMax: 1024,
  stderrMax: 1024,
  floodAllowance: 4096,
  ...overrides
})

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")

/** Real time on purpose: the OS needs a moment to reap reparented grandchildren. */
const eventually = (check: () => boolean) => Sandbox.settles(check, "50 millis")

/**
 * The TestClock's own warning (time used, clock not moved, after 1 s of real
 * time) would join the logs a test captures: not within the wait bounds.
 */
const quietTestClock = Effect.provide(TestClock.layer({ warningDelay: Sandbox.defaultBound }))

/**
 * A claw's shell step that leaves a private directory its removal cannot
 * delete: a file in it immutable where the claw may set that (root), else
 * the parent made read-only (anyone else; a read-only directory inside is
 * opened up and removed). A tree deeper than PATH_MAX no longer does it:
 * Node 24's recursive removal reaches the bottom.
 */
const stuckFile = "mkdir stuck && touch stuck/file && (chattr +i stuck/file 2>/dev/null || chmod 500 ..)"

/** A parent for private directories, emptied at the end whatever a claw left stuck in it. */
const unremovableParent = Effect.tap(tempDir, (parent) =>
  Effect.addFinalizer(() =>
    Effect.sync(() => {
      childProcess.spawnSync("sh", ["-c", 'chattr -R -i . 2>/dev/null; chmod -R u+w .', "unstick"], { cwd: parent })
      Fs.rmSync(parent, { recursive: true, force: true })
    })
  ))

const readPid = (file: string) =>
  eventually(() => Fs.existsSync(file) && Fs.readFileSync(file, "utf8").trim() !== "").pipe(
    Effect.map(() => Number(Fs.readFileSync(file, "utf8").trim()))
  )

// The same behaviour whether this process spawns the command or its spawn helper does (what claws use).
// The grace for output held open is this test's TestClock in this process; in the helper, its real clock.
const runs: ReadonlyArray<{
  readonly where: string
  readonly run: (
    request: ChildProcess.RunRequest
  ) => Effect.Effect<ChildProcess.RunOutcome, ChildProcess.SpawnError | SpawnHelperDied, ProcessServices>
  readonly clocked: boolean
}> = [
  // With the test's watchdog (support/ProcessServices), as a command's.
  { where: "ChildProcess.run, spawned here", run: ChildProcess.run, clocked: true },
  { where: "SpawnHelper.run, spawned by the helper", run: runInHelper, clocked: false }
]
describe.each(runs)("$where", ({ clocked, run }) => {
  it.effect("collects stdout, stderr and the exit code", () =>
    Effect.gen(function*() {
      const outcome = yield* run(shell("printf out; printf err >&2; exit 7"))
      expect(text(outcome.stdout)).toBe("out")
      expect(text(outcome.stderr)).toBe("err")
      expect(outcome.exitCode).toBe(7)
      expect(outcome.signal).toBeNull()
      expect(outcome.stdoutTruncated).toBe(false)
      expect(outcome.flooded).toBeNull()
    }))

  it.effect("reports a signal death", () =>
    Effect.gen(function*() {
      const outcome = yield* run(shell("kill -TERM $$"))
      expect(outcome.exitCode).toBeNull()
      expect(outcome.signal).toBe("SIGTERM")
    }))

  it.effect("gives the child /dev/null as stdin", () =>
    Effect.gen(function*() {
      const outcome = yield* run(shell("cat; echo eof"))
      expect(text(outcome.stdout)).toBe("eof\n")
    }))

  it.effect("keeps the first bytes of a slightly long output and the real exit status", () =>
    Effect.gen(function*() {
      const outcome = yield* run(shell("head -c 1500 /dev/zero | tr '\\0' a; exit 2"))
      expect(outcome.stdout.length).toBe(1024)
      expect(outcome.stdoutTruncated).toBe(true)
      expect(outcome.flooded).toBeNull()
      expect(outcome.exitCode).toBe(2)
    }))

  it.effect("kills the whole group of an endless writer", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pidFile = Path.join(dir, "pid")
      const outcome = yield* run(shell(`echo $$ > ${pidFile}; yes flood & yes flood; wait`))
      expect(outcome.flooded).toBe("stdout")
      expect(outcome.stdout.length).toBe(1024)
      expect(text(outcome.stdout).startsWith("flood\nflood\n")).toBe(true)
      const pgid = Number(Fs.readFileSync(pidFile, "utf8").trim())
      expect(yield* eventually(() => Sandbox.groupGone(pgid))).toBe(true)
    }))

  it.effect("kills the whole group of an endless stderr writer, its stderr kept to the cap", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pidFile = Path.join(dir, "pid")
      const outcome = yield* run(shell(`echo $$ > ${pidFile}; printf out; yes noise >&2 & yes noise >&2; wait`))
      expect(outcome.flooded).toBe("stderr")
      expect(text(outcome.stdout)).toBe("out")
      expect(outcome.stderr.length).toBe(1024)
      expect(outcome.stderrTruncated).toBe(true)
      expect(text(outcome.stderr).startsWith("noise\nnoise\n")).toBe(true)
      const pgid = Number(Fs.readFileSync(pidFile, "utf8").trim())
      expect(yield* eventually(() => Sandbox.groupGone(pgid))).toBe(true)
    }))

  it.effect("keeps the exit status of a command a little past the stderr cap", () =>
    Effect.gen(function*() {
      const outcome = yield* run(shell("head -c 3000 /dev/zero | tr '\\0' e >&2; exit 4"))
      expect(outcome.flooded).toBeNull()
      expect(outcome.stderr.length).toBe(1024)
      expect(outcome.stderrTruncated).toBe(true)
      expect(outcome.exitCode).toBe(4)
    }))

  it.effect("does not wait for a background child that still holds stdout, and kills it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pidFile = Path.join(dir, "pid")
      const outcome = yield* run(shell(`echo $$ > ${pidFile}; sleep 1000 & echo done`))
      expect(text(outcome.stdout)).toBe("done\n")
      expect(outcome.exitCode).toBe(0)
      const pgid = Number(Fs.readFileSync(pidFile, "utf8").trim())
      expect(yield* eventually(() => Sandbox.groupGone(pgid))).toBe(true)
    }))

  it.effect("kills the whole group when interrupted", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pidFile = Path.join(dir, "pid")
      const fiber = yield* Effect.forkChild(run(shell(`echo $$ > ${pidFile}; sleep 1000 & sleep 1000; wait`)))
      const pgid = yield* readPid(pidFile)
      expect(Sandbox.groupGone(pgid)).toBe(false)
      yield* Fiber.interrupt(fiber)
      expect(yield* eventually(() => Sandbox.groupGone(pgid))).toBe(true)
    }))

  // GNU timeout puts itself and its command in a group of their own, within the claw's session.
  const ownGroupJob = (dir: string) =>
    `timeout 1000 sh -c 'echo $$ > ${Path.join(dir, "inner")}; exec sleep 1000' & echo $! > ${Path.join(dir, "timeout")};`
  /** The job's two processes; SIGKILLed at the end of the test should they outlive it. */
  const ownGroupPids = (dir: string) =>
    Effect.gen(function*() {
      const pids = [yield* readPid(Path.join(dir, "timeout")), yield* readPid(Path.join(dir, "inner"))]
      yield* Effect.addFinalizer(() => Effect.sync(() => pids.forEach((pid) => Sandbox.isRunning(pid) && process.kill(pid, "SIGKILL"))))
      return pids
    })

  it.effect("kills a job that made a process group of its own (GNU timeout) when interrupted", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fiber = yield* Effect.forkChild(run(shell(`${ownGroupJob(dir)} wait`)))
      const pids = yield* ownGroupPids(dir)
      yield* Fiber.interrupt(fiber)
      expect(yield* eventually(() => pids.every((pid) => !Sandbox.isRunning(pid)))).toBe(true)
    }))

  it.effect("kills a job that made a process group of its own when the main process exits, not waiting for it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // The main process exits once the job runs in its own group (its pid written), not before.
      const inner = Path.join(dir, "inner")
      const fiber = yield* Effect.forkChild(run(shell(`${ownGroupJob(dir)} until [ -s ${inner} ]; do sleep 0.01; done; echo done`)))
      const pids = yield* ownGroupPids(dir)
      // Bounded: before, the job kept stdout open for 1000 s.
      const outcome = yield* Fiber.join(fiber).pipe(Sandbox.within("the run to end"), TestClock.withLive)
      expect(text(outcome.stdout)).toBe("done\n")
      expect(yield* eventually(() => pids.every((pid) => !Sandbox.isRunning(pid)))).toBe(true)
    }))

  it.effect("answers with what was printed a grace after the exit when a process outside its session holds stdout", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const holderFile = Path.join(dir, "holder")
      const logs = yield* captureLogs
      const fiber = yield* Effect.forkChild(run(shell(
        `setsid sh -c 'echo $$ > ${holderFile}; exec sleep 1000' & until [ -s ${holderFile} ]; do sleep 0.01; done; echo printed-before-exit`
      )).pipe(Effect.provide(logs.layer)))
      const holder = yield* readPid(holderFile)
      yield* Effect.addFinalizer(() => Effect.sync(() => Sandbox.isRunning(holder) && process.kill(holder, "SIGKILL")))
      if (clocked) {
        // Before the fix no such wait existed: this one timed out.
        // The grace is 1 s (ChildProcess.outputGrace), as the warning says.
        yield* awaitPendingSleep(1000)
        expect(fiber.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("1 second")
      }
      const outcome = yield* Fiber.join(fiber).pipe(Sandbox.within("the run to end"), TestClock.withLive)
      expect(text(outcome.stdout)).toBe("printed-before-exit\n")
      expect(outcome.exitCode).toBe(0)
      expect(logs.lines).toEqual([
        "WARN /bin/sh exited, but a process outside its session (started with setsid?) still held its output open 1s later: " +
        "answered with what it printed by then"
      ])
      // Not the claw's to kill: it left the session.
      expect(Sandbox.isRunning(holder)).toBe(true)
    }))

  it.effect("runs in a private directory made in the parent it names, owner-only, removed once the run ends", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      const outcome = yield* run(shell("pwd; stat -c %a .", { cwd: { privateIn: parent, prefix: "claw-" } }))
      const [cwd, mode] = text(outcome.stdout).trim().split("\n")
      expect(Path.dirname(cwd!)).toBe(Fs.realpathSync(parent))
      // Named after the process that made it (this one, or the spawn helper).
      expect(Path.basename(cwd!)).toMatch(/^claw-\d+-/)
      expect(mode).toBe("700")
      expect(Fs.readdirSync(parent)).toEqual([])
    }))

  it.effect("tells the command its private directory in PWD, whatever PWD and OLDPWD it was given", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      // env, not a shell, prints what it was given: no PWD at all, as from an agent started without one.
      const given = yield* run(shell("", { command: "/usr/bin/env", args: [], cwd: { privateIn: parent, prefix: "p-" } }))
      const misled = yield* run(
        shell("", { command: "/usr/bin/env", args: [], cwd: { privateIn: parent, prefix: "p-" }, env: { PWD: "/", OLDPWD: "/" } })
      )
      for (const outcome of [given, misled]) {
        const lines = text(outcome.stdout).split("\n")
        const pwd = lines.find((line) => line.startsWith("PWD="))?.slice("PWD=".length) ?? "(none)"
        expect(Path.dirname(pwd)).toBe(parent)
        expect(Path.basename(pwd)).toMatch(/^p-\d+-/)
        expect(lines.filter((line) => line.startsWith("OLDPWD="))).toEqual([])
      }
    }))

  it.effect("first removes what processes now dead left in the parent, and nothing else", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      const dead = childProcess.spawnSync("true").pid
      const live = childProcess.spawn("sleep", ["1000"], { stdio: "ignore" })
      yield* Effect.addFinalizer(() => Effect.sync(() => live.kill("SIGKILL")))
      const leave = (name: string) => {
        Fs.mkdirSync(Path.join(parent, name))
        Fs.writeFileSync(Path.join(parent, name, "left"), "x")
      }
      const kept = [`claw-${live.pid}-bbbbbb`, "claw-cccccc", `other-${dead}-dddddd`]
      for (const name of [`claw-${dead}-aaaaaa`, ...kept]) leave(name)
      Fs.writeFileSync(Path.join(parent, `claw-${dead}-file`), "not a directory")
      yield* run(shell("true", { cwd: { privateIn: parent, prefix: "claw-" } }))
      expect(Fs.readdirSync(parent).sort()).toEqual([...kept, `claw-${dead}-file`].sort())
    }))

  it.effect("removes an interrupted run's private directory once its group is gone", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      const dir = yield* tempDir
      const pidFile = Path.join(dir, "pid")
      const fiber = yield* Effect.forkChild(
        run(shell(`touch left-behind; echo $$ > ${pidFile}; sleep 1000`, { cwd: { privateIn: parent, prefix: "claw-" } }))
      )
      const pgid = yield* readPid(pidFile)
      expect(Fs.readdirSync(parent)).toHaveLength(1)
      yield* Fiber.interrupt(fiber)
      // The interruption returns once the group's leader is reaped and the directory removed.
      expect(Fs.readdirSync(parent)).toEqual([])
      expect(yield* eventually(() => Sandbox.groupGone(pgid))).toBe(true)
    }))

  it.effect("logs a private directory it cannot remove where the run was asked for, and still answers", () =>
    Effect.gen(function*() {
      const parent = yield* unremovableParent
      const logs = yield* captureLogs
      const outcome = yield* run(shell(`${stuckFile} && echo made`, { cwd: { privateIn: parent, prefix: "claw-" } })).pipe(
        Effect.provide(logs.layer)
      )
      const [left] = Fs.readdirSync(parent)
      expect(text(outcome.stdout)).toBe("made\n")
      expect(outcome.exitCode).toBe(0)
      expect(logs.lines).toHaveLength(1)
      expect(logs.lines[0]).toMatch(/^WARN cannot remove the working directory /)
      expect(logs.lines[0]).toContain(Path.join(parent, left!))
      // The code differs by Node line (EPERM, EACCES, ENOTDIR from its fallback): the log names one.
      expect(logs.lines[0]).toMatch(/: E[A-Z]+[:,] /)
    }).pipe(quietTestClock))

  it.effect("logs an interrupted run's private directory it cannot remove", () =>
    Effect.gen(function*() {
      const parent = yield* unremovableParent
      const dir = yield* tempDir
      const pidFile = Path.join(dir, "pid")
      const logs = yield* captureLogs
      const fiber = yield* Effect.forkChild(
        run(shell(`${stuckFile} && echo $$ > ${pidFile}; sleep 1000`, { cwd: { privateIn: parent, prefix: "claw-" } })).pipe(
          Effect.provide(logs.layer)
        )
      )
      yield* readPid(pidFile)
      yield* Fiber.interrupt(fiber)
      expect(logs.lines).toHaveLength(1)
      expect(logs.lines[0]).toMatch(/^WARN cannot remove the working directory .*: E[A-Z]+[:,] /)
    }).pipe(quietTestClock))

  it.effect("fails with SpawnError naming the parent when the private directory cannot be made", () =>
    Effect.gen(function*() {
      const error = yield* run(shell("true", { cwd: { privateIn: "/nonexistent/planckclaw-parent", prefix: "claw-" } })).pipe(
        Effect.flip
      )
      expect(error._tag).toBe("SpawnError")
      expect(error.message).toContain("cannot create a working directory in /nonexistent/planckclaw-parent")
      expect(error.message).toContain("ENOENT")
    }))

  it.effect("fails with SpawnError when the command does not exist", () =>
    Effect.gen(function*() {
      const error = yield* run(shell("", { command: "/nonexistent/planckclaw-claw", args: [] })).pipe(
        Effect.flip
      )
      expect(error._tag).toBe("SpawnError")
      expect(error.message).toContain("ENOENT")
    }))
})
