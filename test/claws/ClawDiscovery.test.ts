/**
 * Watched claw discovery on real files and real inotify events: what a warm
 * list costs, which changes reach the next list, and the fallbacks (a watch
 * that fails, a directory removed, renamed or replaced, changes inotify
 * cannot see). No sleeps: events are let in by two turns of the event loop,
 * as ScriptClaws does before every list; the safety scan runs on TestClock.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect } from "@effect/vitest"
import { it } from "../support/ProcessServices.js"
import { Effect, Result } from "effect"
import { TestClock } from "effect/testing"
import { makeDiscovery, type WatchDirectory } from "../../src/claws/ClawDiscovery.js"
import * as Scripts from "../../src/claws/ScriptClaws.js"
import { captureLogs } from "../support/LogCapture.js"
import * as Sandbox from "../support/Sandbox.js"
import { settings, writeSettled } from "./ClawKit.js"

const tempDir = Sandbox.tempDir("planckclaw-discovery-")
const { tool } = Sandbox
/** A claw declaring `toolName`, last modified long ago (see ClawKit). */
const writeOld = (dir: string, file: string, toolName: string) => writeSettled(dir, file, `#!/bin/sh\n${tool(toolName)}\n`)

const names = (catalog: { readonly tools: ReadonlyArray<{ readonly name: string }> }) =>
  catalog.tools.map((t) => t.name)

/** Two turns of the event loop: the events of every change made before have reached the watcher. */
const letEventsIn = Effect.callback<void>((resume) => {
  setImmediate(() => setImmediate(() => resume(Effect.void)))
})

/** A discovery watching `dir` for the test's scope. */
const watched = (dir: string, startWatch?: WatchDirectory) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const discovery = makeDiscovery(dir, startWatch)
      return { discovery, stop: discovery.watch() }
    }),
    ({ stop }) => Effect.sync(stop)
  ).pipe(Effect.map(({ discovery }) => discovery))

/** The inotify watches this process holds on the inode `ino` (from /proc/self/fdinfo). */
const inotifyWatchesOn = (ino: number): number =>
  Fs.readdirSync("/proc/self/fdinfo").reduce((count, fd) => {
    // A descriptor may close between the listing and the read.
    const info = Result.getOrElse(Result.try(() => Fs.readFileSync(`/proc/self/fdinfo/${fd}`, "utf8")), () => "")
    return count + info.split("\n").filter((line) => line.startsWith("inotify ") && line.includes(` ino:${ino.toString(16)} `)).length
  }, 0)

describe("Claw discovery with change notification", () => {
  it.effect("a warm list stats the directory only; an edit stats and reads only the claw it named", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      for (let i = 0; i < 20; i++) yield* writeOld(dir, `c${i}.sh`, `tool_${i}`)
      const discovery = yield* watched(dir)
      expect(names(discovery.scan())).toHaveLength(20)
      expect(discovery.watching()).toBe(true)
      const after = discovery.counts()
      expect(after.fileStats).toBe(20)

      for (let i = 0; i < 10; i++) {
        yield* letEventsIn
        expect(names(discovery.scan())).toHaveLength(20)
      }
      // (Its listing is read again while the directory's last change is recent: see "which versions a scan trusts".)
      expect(discovery.counts()).toEqual({ ...after, directoryStats: after.directoryStats + 10, listings: expect.any(Number) })

      yield* writeOld(dir, "c7.sh", "edited_7")
      yield* letEventsIn
      expect(names(discovery.scan())).toContain("edited_7")
      const edited = discovery.counts()
      expect([edited.fileStats - after.fileStats, edited.fileReads - after.fileReads]).toEqual([1, 1])
    }))

  it.effect("files that cannot be claws (an editor's swap file, notes) stat no claw", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      for (let i = 0; i < 5; i++) yield* writeOld(dir, `c${i}.sh`, `tool_${i}`)
      yield* Effect.sync(() => Fs.writeFileSync(Path.join(dir, "notes.txt"), "first"))
      const discovery = yield* watched(dir)
      discovery.scan()
      const before = discovery.counts().fileStats
      yield* Effect.sync(() => {
        Fs.writeFileSync(Path.join(dir, ".c1.sh.swp"), "swap")
        Fs.writeFileSync(Path.join(dir, "notes.txt"), "second")
      })
      yield* letEventsIn
      expect(names(discovery.scan())).toHaveLength(5)
      expect(discovery.counts().fileStats).toBe(before)
    }))

  it.effect("sees an edit made by another process just before the list (as a user's editor, then a message)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeOld(dir, "old.sh", "before")
      const claws = yield* Scripts.makeWatched(settings(dir))
      expect(names(yield* claws.list)).toEqual(["before"])
      expect(names(yield* claws.list)).toEqual(["before"])
      // The child has exited when execFileSync returns: its write is done, its event maybe not yet read.
      execFileSync("/bin/sh", ["-c", `printf '#!/bin/sh\\n%s\\n' '${tool("after")}' > old.sh`], { cwd: dir })
      expect(names(yield* claws.list)).toEqual(["after"])
    }))

  it.effect("re-reads a claw that was chmod-ed (its ctime changed)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeOld(dir, "mode.sh", "mode")
      const discovery = yield* watched(dir)
      discovery.scan()
      const before = discovery.counts().fileReads
      yield* Effect.sync(() => Fs.chmodSync(Path.join(dir, "mode.sh"), 0o644))
      yield* letEventsIn
      discovery.scan()
      expect(discovery.counts().fileReads).toBe(before + 1)
    }))

  it.effect("a directory replaced under the same name: the new claws on the next list, and the new one watched", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      const dir = Path.join(parent, "claws")
      yield* Effect.sync(() => Fs.mkdirSync(dir))
      yield* writeOld(dir, "a.sh", "old_a")
      const claws = yield* Scripts.makeWatched(settings(dir))
      expect(names(yield* claws.list)).toEqual(["old_a"])

      // The same file name, settled, in a fresh directory: no event reaches the old watch.
      yield* Effect.sync(() => {
        Fs.renameSync(dir, `${dir}.old`)
        Fs.mkdirSync(dir)
      })
      yield* writeOld(dir, "a.sh", "new_a")
      expect(names(yield* claws.list)).toEqual(["new_a"])
      yield* writeOld(dir, "a.sh", "newer_a")
      expect(names(yield* claws.list)).toEqual(["newer_a"])
      expect(inotifyWatchesOn(Fs.statSync(dir).ino)).toBe(1)
    }))

  it.effect("a directory removed and created again (maybe on the same inode) is watched again", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      const dir = Path.join(parent, "claws")
      yield* Effect.sync(() => Fs.mkdirSync(dir))
      yield* writeOld(dir, "a.sh", "first")
      const discovery = yield* watched(dir)
      expect(names(discovery.scan())).toEqual(["first"])
      yield* Effect.sync(() => Fs.rmSync(dir, { recursive: true }))
      yield* letEventsIn
      expect(discovery.scan().problems[0]?.reason).toMatch(/^cannot read the claws directory: ENOENT/)
      expect(discovery.watching()).toBe(false)

      yield* Effect.sync(() => Fs.mkdirSync(dir))
      yield* writeOld(dir, "a.sh", "second")
      expect(names(discovery.scan())).toEqual(["second"])
      expect(discovery.watching()).toBe(true)
      const counts = discovery.counts()
      yield* writeOld(dir, "a.sh", "third")
      yield* letEventsIn
      expect(names(discovery.scan())).toEqual(["third"])
      expect(discovery.counts().fullScans).toBe(counts.fullScans)
    }))

  it.effect("a directory that does not exist yet is found, and watched, once created", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      const dir = Path.join(parent, "later")
      const claws = yield* Scripts.makeWatched(settings(dir))
      expect((yield* claws.list).problems[0]?.reason).toMatch(/^cannot read the claws directory: ENOENT/)
      yield* Effect.sync(() => Fs.mkdirSync(dir))
      yield* writeOld(dir, "a.sh", "late")
      expect(names(yield* claws.list)).toEqual(["late"])
      expect(inotifyWatchesOn(Fs.statSync(dir).ino)).toBe(1)
    }))

  it.effect("CLAWS_DIR as a symlink switched to another directory: the other's claws on the next list", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      const [blue, green, link] = ["blue", "green", "current"].map((name) => Path.join(parent, name))
      yield* Effect.sync(() => {
        Fs.mkdirSync(blue!)
        Fs.mkdirSync(green!)
        Fs.symlinkSync(blue!, link!)
      })
      yield* writeOld(blue!, "a.sh", "blue_a")
      yield* writeOld(green!, "a.sh", "green_a")
      const claws = yield* Scripts.makeWatched(settings(link!))
      expect(names(yield* claws.list)).toEqual(["blue_a"])
      yield* Effect.sync(() => {
        Fs.symlinkSync(green!, `${link}.next`)
        Fs.renameSync(`${link}.next`, link!)
      })
      expect(names(yield* claws.list)).toEqual(["green_a"])
    }))

  it.effect("a watch that cannot start: every list stats every claw, edits are seen, and it is logged once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeOld(dir, "a.sh", "one")
      const logs = yield* captureLogs
      const refuse: WatchDirectory = () => Fs.watch("/nonexistent/planckclaw-no-such-directory")
      const claws = yield* Scripts.makeWatched(settings(dir), refuse)
      yield* Effect.gen(function*() {
        expect(names(yield* claws.list)).toEqual(["one"])
        expect(names(yield* claws.list)).toEqual(["one"])
        yield* writeOld(dir, "a.sh", "two")
        expect(names(yield* claws.list)).toEqual(["two"])
      }).pipe(Effect.provide(logs.layer))
      expect(logs.lines).toHaveLength(1)
      expect(logs.lines[0]).toMatch(/^WARN cannot watch the claws directory .* \(ENOENT.*\): every message stats every claw instead$/)
    }))

  it.effect("a watch that fails later falls back to the stat scan, then watches again", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeOld(dir, "a.sh", "one")
      const handles: Array<Fs.FSWatcher> = []
      const recording: WatchDirectory = (path, onEvent) => {
        const handle = Fs.watch(path, { persistent: false }, (_event, name) => onEvent(name))
        handles.push(handle)
        return handle
      }
      const discovery = yield* watched(dir, recording)
      discovery.scan()
      handles[0]?.emit("error", new Error("EIO: the watch broke"))
      expect(discovery.watching()).toBe(false)
      expect(discovery.watchFailure()).toBe("EIO: the watch broke")
      yield* writeOld(dir, "a.sh", "two")
      const before = discovery.counts().fullScans
      expect(names(discovery.scan())).toEqual(["two"])
      expect(discovery.counts().fullScans).toBe(before + 1)
      expect([discovery.watching(), discovery.watchFailure(), handles.length]).toEqual([true, undefined, 2])
    }))

  it.effect("an edit inotify cannot report (through a hard link elsewhere) is found by the background safety scan", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      const [dir, elsewhere] = [Path.join(parent, "claws"), Path.join(parent, "elsewhere")]
      yield* Effect.sync(() => {
        Fs.mkdirSync(dir)
        Fs.mkdirSync(elsewhere)
      })
      // Enough claws for the pass to take several steps; the linked one comes last.
      for (let i = 0; i < 150; i++) yield* writeOld(dir, `c${String(i).padStart(3, "0")}.sh`, `tool_${i}`)
      yield* writeOld(elsewhere, "zz.sh", "before")
      yield* Effect.sync(() => Fs.linkSync(Path.join(elsewhere, "zz.sh"), Path.join(dir, "zz.sh")))
      const claws = yield* Scripts.makeWatched(settings(dir))
      expect(names(yield* claws.list)).toContain("before")
      yield* writeOld(elsewhere, "zz.sh", "after")
      expect(names(yield* claws.list)).toContain("before")

      yield* TestClock.adjust(Scripts.safetyScanInterval)
      // The pass takes a step per event-loop turn, and each list lets two turns go by.
      const seen = yield* Effect.repeat(claws.list, { until: (catalog) => names(catalog).includes("after"), times: 20 })
      expect(names(seen)).toContain("after")
      expect(names(seen)).not.toContain("before")
    }))

  it.effect("the watch lives as long as its scope", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const ino = Fs.statSync(dir).ino
      yield* Effect.scoped(Effect.gen(function*() {
        const claws = yield* Scripts.makeWatched(settings(dir))
        yield* claws.list
        expect(inotifyWatchesOn(ino)).toBe(1)
      }))
      expect(inotifyWatchesOn(ino)).toBe(0)
    }))
})

describe("Claw discovery: which versions a scan trusts", () => {
  const inADay = () => new Date(Date.now() + 24 * 60 * 60 * 1000)
  /** The wall clock 10 s on: what was changed now is no longer recent (the clock is the discovery's, not the test's). */
  const tenSecondsOn = () => Date.now() + 10_000
  /** A claw (tool aaaa) dated a day ahead, in a directory of its own. */
  const futureClaw = Effect.gen(function*() {
    const dir = yield* tempDir
    const file = Path.join(dir, "future.sh")
    const future = inADay()
    yield* Effect.sync(() => {
      Fs.writeFileSync(file, `#!/bin/sh\n${tool("aaaa")}\n`, { mode: 0o755 })
      Fs.utimesSync(file, future, future)
    })
    return { dir, file, future }
  })

  it.effect("a claw and a directory dated in the future (a tarball's dates) are read again only when they change", () =>
    Effect.gen(function*() {
      const { dir, file, future } = yield* futureClaw
      yield* Effect.sync(() => Fs.utimesSync(dir, future, future))
      // No watch: every scan stats every claw, as `planckclaw tools` does.
      const discovery = makeDiscovery(dir, undefined, tenSecondsOn)
      for (let i = 0; i < 3; i++) expect(names(discovery.scan())).toEqual(["aaaa"])
      expect(discovery.counts()).toMatchObject({ fullScans: 3, fileReads: 1, listings: 1 })

      // The same size, the same future mtime put back: the ctime, which only the kernel sets, moved.
      yield* Effect.sync(() => {
        Fs.writeFileSync(file, `#!/bin/sh\n${tool("bbbb")}\n`)
        Fs.utimesSync(file, future, future)
      })
      expect(names(discovery.scan())).toEqual(["bbbb"])
      expect(discovery.counts()).toMatchObject({ fileReads: 2, listings: 1 })
      // A claw added, the directory's future mtime put back (as tar x does once it has filled it).
      yield* Effect.sync(() => {
        Fs.writeFileSync(Path.join(dir, "added.sh"), `#!/bin/sh\n${tool("added")}\n`, { mode: 0o755 })
        Fs.utimesSync(dir, future, future)
      })
      expect(names(discovery.scan())).toEqual(["added", "bbbb"])
      expect(discovery.scan().tools).toHaveLength(2)
      expect(discovery.counts()).toMatchObject({ fileReads: 3, listings: 2 })
    }))

  it.effect("a claw dated in the future but just changed is still read at every scan until its change is old", () =>
    Effect.gen(function*() {
      const { dir } = yield* futureClaw
      let clock = Date.now()
      const discovery = makeDiscovery(dir, undefined, () => clock)
      // Changed within the filesystem's timestamp granularity: a second edit could leave its identity as it is.
      discovery.scan()
      discovery.scan()
      expect(discovery.counts().fileReads).toBe(2)
      clock += 10_000
      discovery.scan()
      discovery.scan()
      expect(discovery.counts().fileReads).toBe(3)
    }))

  it.effect("the safety pass of a watched directory does not name a claw dated in the future to every next list", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = Path.join(dir, "future.sh")
      const future = inADay()
      yield* writeOld(dir, "old.sh", "old")
      yield* Effect.sync(() => {
        Fs.writeFileSync(file, `#!/bin/sh\n${tool("future")}\n`, { mode: 0o755 })
        Fs.utimesSync(file, future, future)
      })
      const discovery = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const made = makeDiscovery(dir, undefined, tenSecondsOn)
          return { discovery: made, stop: made.watch() }
        }),
        ({ stop }) => Effect.sync(stop)
      ).pipe(Effect.map(({ discovery }) => discovery))
      expect(names(discovery.scan())).toEqual(["future", "old"])
      const read = discovery.counts().fileReads
      for (let i = 0; i < 3; i++) {
        expect(discovery.verify(0, 64)).toBeUndefined()
        yield* letEventsIn
        discovery.scan()
      }
      expect(discovery.counts()).toMatchObject({ fileReads: read, fileStats: 2 + 3 * 2 })
    }))
})
