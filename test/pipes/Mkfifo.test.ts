/**
 * The runtime directory's FIFOs come from an `mkfifo` child: the usual
 * /usr/bin/mkfifo first, PATH's when it is missing; its messages name it
 * `mkfifo` whatever path it ran from, and a missing one is said plainly.
 * A run's FIFOs are first made without reading mkfifo's stderr; a failure
 * removes what it made and asks again, to say mkfifo's own words.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeFifos, mkfifo } from "../../src/pipes/RuntimeDir.js"
import { tempDir } from "../support/FifoKit.js"

describe("mkfifo", () => {
  it.effect("makes FIFOs 0600 with PATH's mkfifo when the first one tried is not there", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const files = ["a", "b"].map((name) => path.join(dir, name))
      yield* mkfifo(files, [path.join(dir, "missing", "mkfifo"), "mkfifo"])
      for (const file of files) {
        const info = fs.lstatSync(file)
        expect(info.isFIFO()).toBe(true)
        expect(info.mode & 0o777).toBe(0o600)
      }
    }))

  it.effect("says which mkfifo is missing when none is there", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const last = path.join(dir, "also-missing", "mkfifo")
      const refused = yield* Effect.flip(mkfifo([path.join(dir, "a")], [path.join(dir, "missing", "mkfifo"), last]))
      expect(refused.message).toBe(`mkfifo failed: spawn ${last} ENOENT`)
      expect(fs.existsSync(path.join(dir, "a"))).toBe(false)
    }))

  it.effect("passes on mkfifo's own error, naming it mkfifo, with the path as it is", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      for (const name of ["gone", "gone-é"]) {
        const file = path.join(dir, name, "a")
        const refused = yield* Effect.flip(mkfifo([file]))
        // GNU's words here; another mkfifo's differ, but not the name or the path.
        expect(refused.message.startsWith("mkfifo failed: mkfifo: ")).toBe(true)
        expect(refused.message).toContain(file)
      }
    }))

  it.effect("a run's FIFOs: all made with their inodes, or none left and mkfifo's own words when one cannot be", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const files = ["a", "b"].map((name) => path.join(dir, name))
      const made = yield* makeFifos(files)
      expect([...made.keys()]).toEqual(files)
      for (const file of files) expect(made.get(file)).toBe(fs.lstatSync(file).ino)

      // GNU mkfifo goes on past a failure: the first two are made, the third cannot be.
      const partly = [path.join(dir, "c"), path.join(dir, "d"), path.join(dir, "gone", "e")]
      const refused = yield* Effect.flip(makeFifos(partly))
      expect(refused.message.startsWith("mkfifo failed: mkfifo: ")).toBe(true)
      expect(refused.message).toContain(partly[2])
      // Not "File exists" for c or d: the second mkfifo ran once the first one's were gone.
      expect(refused.message).not.toContain(partly[0])
      for (const file of partly) expect(fs.existsSync(file)).toBe(false)
    }))

  it.effect("a run's FIFOs with the first mkfifo missing: PATH's makes them, and says why it cannot", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // A mkfifo that counts its starts, then is PATH's.
      const starts = path.join(dir, "starts")
      const counting = path.join(dir, "counting-mkfifo")
      fs.writeFileSync(counting, `#!/bin/sh\necho >> ${starts}\nexec mkfifo "$@"\n`, { mode: 0o700 })
      const commands = [path.join(dir, "missing", "mkfifo"), counting]
      const files = ["a", "b"].map((name) => path.join(dir, name))
      expect([...(yield* makeFifos(files, commands)).keys()]).toEqual(files)
      const partly = [path.join(dir, "c"), path.join(dir, "gone", "e")]
      const refused = yield* Effect.flip(makeFifos(partly, commands))
      expect(refused.message).toContain(partly[1])
      expect(refused.message).not.toContain("ENOENT")
      // One start for the first, two for the second (unexplained, then explained).
      expect(fs.readFileSync(starts, "utf8")).toBe("\n\n\n")
    }))
})
