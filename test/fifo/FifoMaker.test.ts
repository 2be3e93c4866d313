/**
 * The mkfifo child a run starts early (FifoMaker.prepare): it makes nothing
 * until it is given the paths, is used once, carries no secret, and its
 * failures name mkfifo's message, as the child spawned on the spot does.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Exit, Scope } from "effect"
import * as FifoMaker from "../../src/fifo/FifoMaker.js"
import { fifoNames, makeRuntimeDir } from "../../src/fifo/RuntimeDir.js"
import { tempDir } from "../support/FifoKit.js"

const sixIn = (dir: string) => Object.values(fifoNames).map((name) => path.join(dir, name))
const listing = (dir: string) => Effect.sync(() => fs.readdirSync(dir).sort())

/** A prepared child for the test, discarded (and gone) when it ends. */
const prepared = Effect.acquireRelease(Effect.sync(() => FifoMaker.prepare()), () => FifoMaker.discardPrepared)

describe("the prepared mkfifo child", () => {
  it.scoped("makes the six FIFOs 0600 once given their paths, and is used once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* prepared
      const pid = FifoMaker.preparedPid()
      expect(pid).toBeTypeOf("number")
      expect(yield* listing(dir)).toEqual([])
      yield* FifoMaker.mkfifo(sixIn(dir))
      expect(FifoMaker.preparedPid()).toBeUndefined()
      for (const file of sixIn(dir)) {
        const stat = fs.lstatSync(file)
        expect(stat.isFIFO()).toBe(true)
        expect(stat.mode & 0o777).toBe(0o600)
      }
      // Used up: the next pipes come from a child spawned on the spot.
      const other = path.join(dir, "other")
      fs.mkdirSync(other)
      yield* FifoMaker.mkfifo(sixIn(other))
      expect((yield* listing(other)).length).toBe(6)
    }))

  it.scoped("is given PATH and the locale, not the secrets of the environment it starts in", () =>
    Effect.gen(function*() {
      const before = process.env.ANTHROPIC_API_KEY
      yield* Effect.acquireRelease(
        Effect.sync(() => void (process.env.ANTHROPIC_API_KEY = "not-a-real-key-for-this-test")),
        () => Effect.sync(() => before === undefined ? delete process.env.ANTHROPIC_API_KEY : void (process.env.ANTHROPIC_API_KEY = before))
      )
      yield* prepared
      const environ = fs.readFileSync(`/proc/${FifoMaker.preparedPid()}/environ`, "utf8").split("\0")
      expect(environ.some((entry) => entry.startsWith("PATH="))).toBe(true)
      expect(environ.filter((entry) => entry.includes("not-a-real-key"))).toEqual([])
      expect(environ.every((entry) => entry === "" || /^(PATH|LANG|LC_[A-Z_]+)=/.test(entry))).toBe(true)
    }))

  it.scoped("makes nothing when discarded unused, and exits", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      FifoMaker.prepare()
      const pid = FifoMaker.preparedPid()!
      yield* FifoMaker.discardPrepared
      expect(FifoMaker.preparedPid()).toBeUndefined()
      expect(() => process.kill(pid, 0)).toThrow()
      expect(yield* listing(dir)).toEqual([])
    }))

  it.scoped("fails naming mkfifo's message; makeRuntimeDir lays its pipes out through it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* prepared
      const error = yield* Effect.flip(FifoMaker.mkfifo(sixIn(path.join(dir, "missing"))))
      expect(error.reason).toBe("io")
      expect(error.message).toMatch(/^mkfifo failed: .*missing\/interact_in/)

      // Through makeRuntimeDir: the six pipes, with the prepared child.
      yield* prepared
      const runDir = path.join(dir, "run")
      const scope = yield* Scope.make()
      yield* makeRuntimeDir(runDir).pipe(Scope.extend(scope))
      expect(FifoMaker.preparedPid()).toBeUndefined()
      expect(yield* listing(runDir)).toEqual([...Object.values(fifoNames), "planckclaw.pid"].sort())
      yield* Scope.close(scope, Exit.void)
      expect(fs.existsSync(runDir)).toBe(false)
    }))
})
