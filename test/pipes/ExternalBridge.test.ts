import { describe, expect } from "@effect/vitest"
import { it } from "../support/ProcessServices.js"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Exit, Fiber, Option, Queue, Redacted, Schedule, Scope } from "effect"
import { TestClock } from "effect/testing"
import { type BridgeExit, bridgeEnv, make } from "../../src/pipes/ExternalBridge.js"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { fifoPaths, makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { linesFrom, mkfifo, tempDir, writeScript } from "../support/FifoKit.js"
import * as Sandbox from "../support/Sandbox.js"
import { advanceTo, awaitPendingSleep } from "../support/TestClockWait.js"

const fakeSecrets = { ANTHROPIC_API_KEY: "test-key-not-secret", DISCORD_BOT_TOKEN: "test-token-not-secret" }

/** A runtime dir plus a FIFO on which test scripts say when they started. */
const setup = Effect.gen(function*() {
  const dir = yield* tempDir
  const paths = yield* makeRuntimeDir(path.join(dir, "run"))
  const signal = path.join(dir, "signal")
  yield* mkfifo(signal)
  const started = yield* linesFrom(signal)
  return { dir, paths, signal, started }
})

const readText = (file: string) => Effect.promise(() => fs.promises.readFile(file, "utf8"))
const processGroupOf = (pid: number) => Effect.map(readText(`/proc/${pid}/stat`), (stat) => Number(stat.split(") ")[1]?.split(" ")[2]))

/** Waits in real time (the TestClock stands still in these tests) until `pid` no longer runs; true. */
const exited = (what: string, pid: number) => TestClock.withLive(Sandbox.exited(what, pid))

describe("bridgeEnv", () => {
  const paths = fifoPaths("/run/pc")

  it("drops both secrets from the inherited environment and adds the FIFO paths", () => {
    const env = bridgeEnv({
      paths,
      baseEnv: { PATH: "/usr/bin", HOME: "/home/me", ...fakeSecrets },
      extraEnv: { DISCORD_CHANNEL_ID: "123", ANTHROPIC_API_KEY: "smuggled" }
    })
    expect(env).toEqual({
      PATH: "/usr/bin",
      HOME: "/home/me",
      DISCORD_CHANNEL_ID: "123",
      PLANCKCLAW_RUN_DIR: "/run/pc",
      PLANCKCLAW_INTERACT_IN: "/run/pc/interact_in",
      PLANCKCLAW_INTERACT_OUT: "/run/pc/interact_out",
      PLANCKCLAW_BRAIN_IN: "/run/pc/brain_in",
      PLANCKCLAW_BRAIN_OUT: "/run/pc/brain_out",
      PLANCKCLAW_CLAW_IN: "/run/pc/claw_in",
      PLANCKCLAW_CLAW_OUT: "/run/pc/claw_out"
    })
  })

  it("passes exactly the secrets it is given", () => {
    const env = bridgeEnv({
      paths,
      baseEnv: fakeSecrets,
      secrets: { ANTHROPIC_API_KEY: Redacted.make("test-key-not-secret") }
    })
    expect(env["ANTHROPIC_API_KEY"]).toBe("test-key-not-secret")
    expect("DISCORD_BOT_TOKEN" in env).toBe(false)
  })
})

describe("ExternalBridge", () => {
  it.effect("starts the executable in its own process group with that environment", () =>
    Effect.gen(function*() {
      const { dir, paths, signal, started } = yield* setup
      const script = yield* writeScript(dir, "bridge.sh", `env > "$PLANCKCLAW_RUN_DIR/env.txt"\nprintf 'started\\n' > "$SIGNAL"\nexec sleep 1000\n`)
      const bridge = yield* make({
        name: "discord",
        command: script,
        paths,
        baseEnv: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", ...fakeSecrets },
        extraEnv: { SIGNAL: signal },
        secrets: { DISCORD_BOT_TOKEN: Redacted.make("test-token-not-secret") }
      })
      expect(yield* Queue.take(started)).toBe("started")
      const env = (yield* readText(path.join(paths.runDir, "env.txt"))).split("\n")
      expect(env).toContain("DISCORD_BOT_TOKEN=test-token-not-secret")
      expect(env.some((line) => line.startsWith("ANTHROPIC_API_KEY="))).toBe(false)
      expect(env).toContain(`PLANCKCLAW_RUN_DIR=${paths.runDir}`)
      expect(env).toContain(`PLANCKCLAW_CLAW_OUT=${paths.clawOut}`)
      const pid = Option.getOrThrow(yield* bridge.pid)
      expect(yield* processGroupOf(pid)).toBe(pid)
      expect(yield* bridge.starts).toBe(1)
    }))

  it.effect("restarts a bridge that died, after the backoff the schedule gives", () =>
    Effect.gen(function*() {
      const { dir, paths, signal, started } = yield* setup
      const deaths = yield* Queue.unbounded<BridgeExit>()
      const script = yield* writeScript(dir, "dies.sh", `printf 'started\\n' > "$SIGNAL"\nexit 3\n`)
      const bridge = yield* make({
        name: "brain",
        command: script,
        paths,
        extraEnv: { SIGNAL: signal },
        restartSchedule: Schedule.exponential("1 second").pipe(
          Schedule.setInputType<BridgeExit>(),
          Schedule.tap((step) => Queue.offer(deaths, step.input))
        )
      })
      expect(yield* Queue.take(started)).toBe("started")
      expect(yield* Queue.take(deaths)).toEqual({ code: 3, signal: null })
      yield* awaitPendingSleep(1_000)
      yield* TestClock.adjust("999 millis")
      expect(yield* bridge.starts).toBe(1)
      yield* TestClock.adjust("1 millis")
      expect(yield* Queue.take(started)).toBe("started")
      expect(yield* bridge.starts).toBe(2)

      // The second delay is twice the first.
      expect((yield* Queue.take(deaths)).code).toBe(3)
      yield* awaitPendingSleep(3_000)
      yield* TestClock.adjust("1999 millis")
      expect(yield* bridge.starts).toBe(2)
      yield* TestClock.adjust("1 millis")
      expect(yield* Queue.take(started)).toBe("started")
      expect(yield* bridge.starts).toBe(3)
    }))

  it.effect("tells those listening of each exit once its process group is killed, before the restart", () =>
    Effect.gen(function*() {
      const { dir, paths, signal, started } = yield* setup
      const script = yield* writeScript(
        dir,
        "dies-with-helper.sh",
        `sleep 1000 &\necho $! > "$GRANDCHILD"\nprintf 'started\\n' > "$SIGNAL"\nexit 3\n`
      )
      const bridge = yield* make({
        name: "brain",
        command: script,
        paths,
        extraEnv: { SIGNAL: signal, GRANDCHILD: path.join(dir, "grandchild") },
        restartSchedule: Schedule.exponential("1 second")
      })
      const heard = yield* Queue.unbounded<{ readonly starts: number; readonly pid: Option.Option<number> }>()
      yield* bridge.exits(Effect.gen(function*() {
        yield* Queue.offer(heard, { starts: yield* bridge.starts, pid: yield* bridge.pid })
      }))
      expect(yield* Queue.take(started)).toBe("started")
      // Heard before the restart, with no child running.
      expect(yield* Queue.take(heard)).toEqual({ starts: 1, pid: Option.none() })
      // The helper it left in its group was killed with it.
      expect(yield* exited("the helper", Number(yield* readText(path.join(dir, "grandchild"))))).toBe(true)
      yield* advanceTo(1_000)
      expect(yield* Queue.take(started)).toBe("started")
      expect(yield* Queue.take(heard)).toEqual({ starts: 2, pid: Option.none() })
    }))

  it.effect("starts the backoff over after a run that lasted healthyAfter", () =>
    Effect.gen(function*() {
      const { dir, paths, signal, started } = yield* setup
      const go = path.join(dir, "go")
      yield* mkfifo(go)
      const release = yield* openWriter(go)
      // Runs after the first wait for a line on $GO before they exit.
      const script = yield* writeScript(
        dir,
        "flaky.sh",
        `n=$(cat "$COUNT" 2>/dev/null || echo 0)\nn=$((n + 1))\necho "$n" > "$COUNT"\nprintf 'started %s\\n' "$n" > "$SIGNAL"\n[ "$n" -ge 2 ] && read x < "$GO"\nexit 1\n`
      )
      const bridge = yield* make({
        name: "claw",
        command: script,
        paths,
        extraEnv: { SIGNAL: signal, GO: go, COUNT: path.join(dir, "count") },
        restartSchedule: Schedule.exponential("1 second"),
        healthyAfter: "10 seconds"
      })
      expect(yield* Queue.take(started)).toBe("started 1")
      yield* advanceTo(1_000)
      expect(yield* Queue.take(started)).toBe("started 2")
      yield* TestClock.adjust("10 seconds")
      yield* release.write("go\n")
      // Without the reset this delay would be 2 seconds (a sleep until 13_000).
      yield* awaitPendingSleep(12_000)
      yield* TestClock.adjust("999 millis")
      expect(yield* bridge.starts).toBe(2)
      yield* TestClock.adjust("1 millis")
      expect(yield* Queue.take(started)).toBe("started 3")
    }))

  it.effect("with restart on-failure, lets a clean exit end the bridge; gives up when the schedule does", () =>
    Effect.gen(function*() {
      const { dir, paths } = yield* setup
      const clean = yield* make({
        name: "cli",
        command: yield* writeScript(dir, "clean.sh", "exit 0\n"),
        paths,
        restart: "on-failure"
      })
      expect(yield* clean.finished).toEqual({ code: 0, signal: null })
      expect(yield* clean.starts).toBe(1)

      const failing = yield* make({
        name: "brain",
        command: yield* writeScript(dir, "failing.sh", "exit 5\n"),
        paths,
        restart: "on-failure",
        restartSchedule: Schedule.recurs(2)
      })
      expect(yield* failing.finished).toEqual({ code: 5, signal: null })
      expect(yield* failing.starts).toBe(3)
    }))

  it.effect("kills its whole process group on scope close and leaves no process behind", () =>
    Effect.gen(function*() {
      const { dir, paths, signal, started } = yield* setup
      const script = yield* writeScript(
        dir,
        "parent.sh",
        `sleep 1000 &\necho $! > "$GRANDCHILD"\nprintf 'started\\n' > "$SIGNAL"\nwait\n`
      )
      const scope = yield* Scope.make()
      const bridge = yield* make({
        name: "interact",
        command: script,
        paths,
        extraEnv: { SIGNAL: signal, GRANDCHILD: path.join(dir, "grandchild") }
      }).pipe(Scope.provide(scope))
      expect(yield* Queue.take(started)).toBe("started")
      const leader = Option.getOrThrow(yield* bridge.pid)
      const grandchild = Number(yield* readText(path.join(dir, "grandchild")))
      expect(Sandbox.isRunning(grandchild)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(Sandbox.isRunning(leader)).toBe(false)
      expect(yield* exited("the grandchild", grandchild)).toBe(true)
      expect(yield* bridge.starts).toBe(1)
    }))

  it.effect("SIGKILLs a bridge that ignores SIGTERM once the grace period is over", () =>
    Effect.gen(function*() {
      const { dir, paths, signal, started } = yield* setup
      const script = yield* writeScript(
        dir,
        "stubborn.sh",
        `trap '' TERM\nsleep 1000 &\necho $! > "$GRANDCHILD"\nprintf 'started\\n' > "$SIGNAL"\nwait\n`
      )
      const scope = yield* Scope.make()
      const bridge = yield* make({
        name: "stubborn",
        command: script,
        paths,
        extraEnv: { SIGNAL: signal, GRANDCHILD: path.join(dir, "grandchild") },
        killGrace: "5 seconds"
      }).pipe(Scope.provide(scope))
      expect(yield* Queue.take(started)).toBe("started")
      const leader = Option.getOrThrow(yield* bridge.pid)
      const grandchild = Number(yield* readText(path.join(dir, "grandchild")))
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      yield* awaitPendingSleep(5_000)
      expect(Sandbox.isRunning(leader)).toBe(true)
      yield* TestClock.adjust("5 seconds")
      yield* Fiber.join(closing)
      expect(Sandbox.isRunning(leader)).toBe(false)
      expect(yield* exited("the grandchild", grandchild)).toBe(true)
    }))

  it.effect("fails at once when the command is not an executable file", () =>
    Effect.gen(function*() {
      const { dir, paths } = yield* setup
      const error = yield* Effect.flip(make({ name: "brain", command: path.join(dir, "missing.sh"), paths }))
      expect(error._tag).toBe("ExternalBridgeError")
      expect(error.message).toContain("not an executable file")
    }))

  it.effect("fails at once, naming it, when the script's #! line names an interpreter that cannot run", () =>
    Effect.gen(function*() {
      const { dir, paths } = yield* setup
      const script = (name: string, firstLine: string) =>
        Effect.promise(async () => {
          const file = path.join(dir, name)
          await fs.promises.writeFile(file, `${firstLine}\necho never\n`, { mode: 0o755 })
          return file
        })
      const missing = yield* script("missing-interpreter.sh", "#!/nonexistent/interpreter -e")
      const missingError = yield* Effect.flip(make({ name: "brain", command: missing, paths }))
      expect(missingError.message).toBe(
        `bridge ${missing} names "/nonexistent/interpreter" on its #! line, which is not an executable file`
      )
      // Saved with Windows line endings: the CR is part of the interpreter's name, and the message says so.
      const crlf = yield* script("crlf.sh", "#!/bin/sh\r")
      const crlfError = yield* Effect.flip(make({ name: "brain", command: crlf, paths }))
      expect(crlfError.message).toBe(
        `bridge ${crlf} names "/bin/sh\\r" on its #! line, which is not an executable file ` +
          "(the file has Windows line endings: convert them, e.g. with dos2unix)"
      )
    }))
})
