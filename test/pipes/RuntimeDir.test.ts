import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { ConfigProvider, Deferred, Effect, Exit, Fiber, Scope } from "effect"
import { openReader, openWriter } from "../../src/pipes/PipeEnd.js"
import { fifoNames, fifoPathsConfig, makeRuntimeDir, pidFileName } from "../../src/pipes/RuntimeDir.js"
import { linesFrom, mkfifo, sh, spawnScoped, takeN, tempDir } from "../support/FifoKit.js"

const stat = (file: string) => Effect.promise(() => fs.promises.lstat(file))
const exists = (file: string) => Effect.promise(() => fs.promises.lstat(file).then(() => true, () => false))
const allFifos = Object.values(fifoNames)

describe("makeRuntimeDir", () => {
  it.effect("creates the directory 0700 with six FIFOs 0600 and our pid, and removes it all on scope close", () =>
    Effect.gen(function*() {
      const runDir = path.join(yield* tempDir, "run")
      const scope = yield* Scope.make()
      const paths = yield* makeRuntimeDir(runDir).pipe(Scope.provide(scope))
      expect(paths.runDir).toBe(runDir)
      expect((yield* stat(runDir)).mode & 0o777).toBe(0o700)
      for (const name of allFifos) {
        const info = yield* stat(path.join(runDir, name))
        expect(info.isFIFO()).toBe(true)
        expect(info.mode & 0o777).toBe(0o600)
      }
      expect(paths.brainOut).toBe(path.join(runDir, "brain_out"))
      expect(yield* Effect.promise(() => fs.promises.readFile(path.join(runDir, pidFileName), "utf8"))).toBe(`${process.pid}\n`)
      yield* Scope.close(scope, Exit.void)
      expect(yield* exists(runDir)).toBe(false)
    }))

  it.effect("uses an existing private directory of ours and leaves it; one open to others is refused, mode untouched", () =>
    Effect.gen(function*() {
      const runDir = yield* tempDir
      yield* Effect.promise(() => fs.promises.chmod(runDir, 0o755))
      const refused = yield* Effect.flip(makeRuntimeDir(runDir))
      expect(refused.message).toContain(`runtime directory ${runDir} is open to other users (mode 0755)`)
      expect((yield* stat(runDir)).mode & 0o777).toBe(0o755)
      expect(yield* Effect.promise(() => fs.promises.readdir(runDir))).toEqual([])

      yield* Effect.promise(() => fs.promises.chmod(runDir, 0o700))
      const scope = yield* Scope.make()
      yield* makeRuntimeDir(runDir).pipe(Scope.provide(scope))
      expect((yield* stat(runDir)).mode & 0o777).toBe(0o700)
      yield* Scope.close(scope, Exit.void)
      expect(yield* exists(runDir)).toBe(true)
      expect(yield* Effect.promise(() => fs.promises.readdir(runDir))).toEqual([])
    }))

  it.effect("refuses a symbolic link", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const target = path.join(dir, "elsewhere")
      yield* Effect.promise(() => fs.promises.mkdir(target, { mode: 0o700 }))
      yield* Effect.promise(() => fs.promises.symlink(target, path.join(dir, "run")))
      const error = yield* Effect.flip(makeRuntimeDir(path.join(dir, "run")))
      expect(error.message).toContain("symbolic link")
      expect(yield* Effect.promise(() => fs.promises.readdir(target))).toEqual([])
    }))

  it.effect("refuses a directory owned by another user", () =>
    Effect.gen(function*() {
      // As root, hand a directory to someone else; otherwise a root-owned directory is someone else's.
      const runDir = process.getuid?.() === 0 ? yield* tempDir : "/"
      if (runDir !== "/") yield* Effect.promise(() => fs.promises.chown(runDir, 4242, 4242))
      const error = yield* Effect.flip(makeRuntimeDir(runDir))
      expect(error.message).toContain("owned by uid")
      expect(yield* exists(path.join(runDir, pidFileName))).toBe(false)
    }))

  it.effect("refuses a directory in use by a live run, in another process or in this one", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const other = path.join(dir, "other")
      yield* Effect.promise(() => fs.promises.mkdir(other, { mode: 0o700 }))
      const live = yield* spawnScoped("/bin/sleep", {}, ["1000"])
      yield* Effect.promise(() => fs.promises.writeFile(path.join(other, pidFileName), `${live.pid}\n`))
      const error = yield* Effect.flip(makeRuntimeDir(other))
      expect(error.message).toContain(`in use by a live run (pid ${live.pid})`)
      expect(yield* exists(path.join(other, "interact_in"))).toBe(false)

      const ours = path.join(dir, "ours")
      yield* makeRuntimeDir(ours)
      const second = yield* Effect.flip(makeRuntimeDir(ours))
      expect(second.message).toContain(`pid ${process.pid}`)
      expect((yield* stat(path.join(ours, "claw_in"))).isFIFO()).toBe(true)
    }))

  it.effect("cleans up what a killed run left behind", () =>
    Effect.gen(function*() {
      const runDir = yield* tempDir
      const dead = yield* spawnScoped("/bin/true")
      yield* Deferred.await(dead.exited)
      yield* Effect.promise(() => fs.promises.writeFile(path.join(runDir, pidFileName), `${dead.pid}\n`))
      yield* mkfifo(path.join(runDir, "brain_in"))
      const paths = yield* makeRuntimeDir(runDir)
      expect((yield* stat(paths.interactIn)).isFIFO()).toBe(true)
      expect((yield* stat(paths.brainIn)).isFIFO()).toBe(true)
      expect(yield* Effect.promise(() => fs.promises.readFile(path.join(runDir, pidFileName), "utf8"))).toBe(`${process.pid}\n`)
    }))
})

describe("fifoPathsConfig", () => {
  it.effect("derives the six paths from PLANCKCLAW_RUN_DIR, each overridable", () =>
    Effect.gen(function*() {
      const paths = yield* fifoPathsConfig.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["PLANCKCLAW_RUN_DIR", "/srv/pc"], ["PLANCKCLAW_BRAIN_IN", "/elsewhere/brain"]])), { preserveEmptyStrings: true })))
      expect(paths).toEqual({
        runDir: "/srv/pc",
        interactIn: "/srv/pc/interact_in",
        interactOut: "/srv/pc/interact_out",
        brainIn: "/elsewhere/brain",
        brainOut: "/srv/pc/brain_out",
        clawIn: "/srv/pc/claw_in",
        clawOut: "/srv/pc/claw_out"
      })
      const defaults = yield* fifoPathsConfig.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map()), { preserveEmptyStrings: true })))
      expect(defaults.clawOut).toBe("/tmp/planckclaw/claw_out")
    }))
})

describe("FIFO ends", () => {
  it.effect("read every message of writers that open and close the pipe per message", () =>
    Effect.gen(function*() {
      const fifo = path.join(yield* tempDir, "in")
      yield* mkfifo(fifo)
      const lines = yield* linesFrom(fifo)
      yield* sh(`printf 'cli\\tone\\n' > "$P"; printf 'cli\\ttwo\\n' > "$P"`, { P: fifo })
      // Had our reader seen EOF after those writers closed, this third one would be lost.
      yield* sh(`printf 'cli\\tthree\\n' > "$P"`, { P: fifo })
      expect(yield* takeN(lines, 3)).toEqual(["cli\tone", "cli\ttwo", "cli\tthree"])
    }))

  it.effect("keep what was written while no reader was there, for a reader that reopens per line", () =>
    Effect.gen(function*() {
      const fifo = path.join(yield* tempDir, "out")
      yield* mkfifo(fifo)
      const writer = yield* openWriter(fifo)
      yield* writer.write("one\n")
      yield* writer.write("two\n")
      yield* writer.write("three\n")
      const seen = yield* sh(`for i in 1 2 3; do IFS= read -r l < "$P"; echo "got $l"; done`, { P: fifo })
      expect(seen).toBe("got one\ngot two\ngot three\n")
      yield* writer.write("four\n")
      expect(yield* sh(`IFS= read -r l < "$P"; echo "$l"`, { P: fifo })).toBe("four\n")
    }))

  it.effect("deliver a write larger than the pipe buffer whole, and the write waits until it is taken", () =>
    Effect.gen(function*() {
      const fifo = path.join(yield* tempDir, "big")
      yield* mkfifo(fifo)
      const writer = yield* openWriter(fifo)
      const payload = Buffer.alloc(1024 * 1024)
      for (let i = 0; i < payload.length; i++) payload[i] = (i * 7 + (i >> 10)) & 0xff
      const writing = yield* Effect.forkChild(writer.write(payload))
      // 64 KiB fit in the pipe; the rest can only go once someone reads.
      yield* sh("true")
      expect(writing.pollUnsafe()).toBeUndefined()
      const digest = yield* sh(`head -c ${payload.length} "$P" | sha256sum`, { P: fifo })
      yield* Fiber.join(writing)
      expect(digest.split(" ")[0]).toBe(createHash("sha256").update(payload).digest("hex"))
    }))

  it.effect("refuse a path that is not a named pipe", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "plain")
      yield* Effect.promise(() => fs.promises.writeFile(file, ""))
      const error = yield* Effect.flip(openReader(file))
      expect(error.message).toContain("not a named pipe")
    }))

  it.effect("close their descriptors on scope close", () =>
    Effect.gen(function*() {
      const fifo = path.join(yield* tempDir, "fd")
      yield* mkfifo(fifo)
      const openFds = Effect.promise(() => fs.promises.readdir("/proc/self/fd")).pipe(Effect.map((fds) => fds.length))
      const before = yield* openFds
      const scope = yield* Scope.make()
      yield* Effect.all([openReader(fifo), openWriter(fifo), openReader(fifo)]).pipe(Scope.provide(scope))
      expect(yield* openFds).toBe(before + 3)
      yield* Scope.close(scope, Exit.void)
      expect(yield* openFds).toBe(before)
    }))

  it.effect("leave the thread pool free while many readers wait", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // More waiting readers than libuv has pool threads (4): blocking reads would starve file I/O.
      for (let i = 0; i < 8; i++) {
        const fifo = path.join(dir, `wait${i}`)
        yield* mkfifo(fifo)
        yield* linesFrom(fifo)
      }
      yield* Effect.promise(() => fs.promises.writeFile(path.join(dir, "plain"), "still works"))
      expect(yield* Effect.promise(() => fs.promises.readFile(path.join(dir, "plain"), "utf8"))).toBe("still works")
    }))
})
