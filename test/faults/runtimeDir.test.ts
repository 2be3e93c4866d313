/**
 * The runtime directory (PLANCKCLAW_RUN_DIR) as the built command treats it:
 * the agent changes only what it created. A path that does not exist yet is
 * made private and removed after; an existing directory is used only if it
 * is already private to this user, and is never chmod-ed; no file it did
 * not create (a regular file named like a pipe, a pipe nobody claims, a
 * symlink) is ever removed.
 *
 * The tests run as root here, which owns every directory they make: the
 * refusals must come from the mode alone, as they would for /tmp.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkfifo } from "../support/FifoKit.js"
import { make as brainServer, echo } from "../support/AnthropicServer.js"
import { fifosLeft } from "../support/Pipes.js"
import { type Sandbox } from "../support/Sandbox.js"
import { sandbox } from "./Campaign.js"
import { connectTo } from "./FifoClient.js"
import { planckclaw, planckclawToEnd, strays } from "./Processes.js"

const TIMEOUT = 120_000
const PIPES = ["interact_in", "interact_out", "brain_in", "brain_out", "claw_in", "claw_out"]

const modeOf = (file: string) => (fs.lstatSync(file).mode & 0o7777).toString(8)

/** `planckclaw run` with empty input on `runDir`: it either refuses or starts and ends at once. */
const runOn = (box: Sandbox, runDir: string) =>
  Effect.gen(function*() {
    const server = yield* brainServer(echo)
    return yield* planckclawToEnd(box, ["run"], box.envWith({ ANTHROPIC_BASE_URL: server.url, PLANCKCLAW_RUN_DIR: runDir }))
  })

/** A refusal: status 1, one line on stderr naming the directory and each of `words`. */
const expectRefused = (result: { code: number | null; stderr: string }, runDir: string, words: ReadonlyArray<string>) => {
  expect(result.code, result.stderr).toBe(1)
  const lines = result.stderr.trim().split("\n")
  expect(lines, result.stderr).toHaveLength(1)
  expect(lines[0]).toContain(runDir)
  for (const word of words) expect(lines[0]).toContain(word)
}

describe("faults: the runtime directory", () => {
  it.live("a path that does not exist yet is made 0700 (parents too) and removed after, parents included", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const server = yield* brainServer(echo)
      const runDir = box.path("fresh/nested/run")
      const proc = yield* planckclaw(
        box,
        ["run", "--bridge", "none"],
        box.envWith({ ANTHROPIC_BASE_URL: server.url, PLANCKCLAW_RUN_DIR: runDir }),
        { stdin: "ignore" }
      )
      const client = yield* connectTo(proc, runDir)
      expect(modeOf(runDir)).toBe("700")
      for (const name of PIPES) expect(fs.lstatSync(path.join(runDir, name)).isFIFO(), name).toBe(true)
      yield* client.send("hello")
      expect(yield* client.reply).toEqual({ channel: "cli", text: "re: hello" })
      yield* proc.signal("SIGTERM")
      expect((yield* proc.ended).code, proc.stderr()).toBe(0)
      expect(fs.existsSync(box.path("fresh")), "the parents it made").toBe(false)
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)

  it.live("an existing private directory (0700, ours) is used, kept, and left as it was", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const runDir = box.path("private")
      fs.mkdirSync(runDir, { mode: 0o700 })
      fs.writeFileSync(path.join(runDir, "notes.txt"), "mine")
      const result = yield* runOn(box, runDir)
      expect(result.code, result.stderr).toBe(0)
      expect(modeOf(runDir)).toBe("700")
      expect(fs.readdirSync(runDir)).toEqual(["notes.txt"])
      expect(fs.readFileSync(path.join(runDir, "notes.txt"), "utf8")).toBe("mine")
    }), TIMEOUT)

  for (const mode of [0o1777, 0o755, 0o770, 0o701] as const) {
    it.live(`an existing directory of mode ${mode.toString(8)} is refused and its mode left alone`, () =>
      Effect.gen(function*() {
        const box = yield* sandbox()
        const runDir = box.path("shared")
        fs.mkdirSync(runDir)
        fs.chmodSync(runDir, mode)
        const result = yield* runOn(box, runDir)
        expectRefused(result, runDir, [mode.toString(8), "PLANCKCLAW_RUN_DIR"])
        expect(modeOf(runDir)).toBe(mode.toString(8))
        expect(fs.readdirSync(runDir)).toEqual([])
      }), TIMEOUT)
  }

  it.live("a symbolic link is refused, and nothing behind it is touched", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const target = box.path("elsewhere")
      fs.mkdirSync(target, { mode: 0o700 })
      const runDir = box.path("link")
      fs.symlinkSync(target, runDir)
      const result = yield* runOn(box, runDir)
      expectRefused(result, runDir, ["symbolic link"])
      expect(fs.lstatSync(runDir).isSymbolicLink()).toBe(true)
      expect(modeOf(target)).toBe("700")
      expect(fs.readdirSync(target)).toEqual([])
    }), TIMEOUT)

  it.live("a regular file named interact_in is refused and left untouched, even beside a dead run's pid file", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const runDir = box.path("private")
      fs.mkdirSync(runDir, { mode: 0o700 })
      const file = path.join(runDir, "interact_in")
      fs.writeFileSync(file, "precious", { mode: 0o640 })
      const before = fs.lstatSync(file)
      // A pid that no live process has: the previous run is provably dead.
      fs.writeFileSync(path.join(runDir, "planckclaw.pid"), "2147483646\n")
      const result = yield* runOn(box, runDir)
      expectRefused(result, runDir, ["interact_in", "not a named pipe"])
      const after = fs.lstatSync(file)
      expect(after.isFile()).toBe(true)
      expect(after.ino).toBe(before.ino)
      expect(modeOf(file)).toBe("640")
      expect(fs.readFileSync(file, "utf8")).toBe("precious")
      expect(fifosLeft(runDir)).toEqual(["interact_in"])
      expect(modeOf(runDir)).toBe("700")
    }), TIMEOUT)

  it.live("a symlink named like a pipe is refused and left in place", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const runDir = box.path("private")
      fs.mkdirSync(runDir, { mode: 0o700 })
      const victim = box.path("victim")
      fs.writeFileSync(victim, "keep me")
      fs.symlinkSync(victim, path.join(runDir, "claw_out"))
      fs.writeFileSync(path.join(runDir, "planckclaw.pid"), "2147483646\n")
      const result = yield* runOn(box, runDir)
      expectRefused(result, runDir, ["claw_out", "not a named pipe"])
      expect(fs.lstatSync(path.join(runDir, "claw_out")).isSymbolicLink()).toBe(true)
      expect(fs.readFileSync(victim, "utf8")).toBe("keep me")
    }), TIMEOUT)

  it.live("named pipes that no dead run's pid file claims are refused and kept", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const runDir = box.path("private")
      fs.mkdirSync(runDir, { mode: 0o700 })
      const pipe = path.join(runDir, "brain_in")
      yield* mkfifo(pipe)
      const result = yield* runOn(box, runDir)
      expectRefused(result, runDir, ["brain_in", "planckclaw.pid"])
      expect(fs.lstatSync(pipe).isFIFO()).toBe(true)
      expect(fs.readdirSync(runDir)).toEqual(["brain_in"])
    }), TIMEOUT)
})
