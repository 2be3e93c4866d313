/**
 * The runtime directory's FIFOs come from an `mkfifo` child: the usual
 * /usr/bin/mkfifo first, PATH's when it is missing; its messages name it
 * `mkfifo` whatever path it ran from, and a missing one is said plainly.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkfifo } from "../../src/fifo/RuntimeDir.js"
import { tempDir } from "../support/FifoKit.js"

describe("mkfifo", () => {
  it.scoped("makes FIFOs 0600 with PATH's mkfifo when the first one tried is not there", () =>
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

  it.scoped("says which mkfifo is missing when none is there", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const last = path.join(dir, "also-missing", "mkfifo")
      const refused = yield* Effect.flip(mkfifo([path.join(dir, "a")], [path.join(dir, "missing", "mkfifo"), last]))
      expect(refused.message).toBe(`mkfifo failed: spawn ${last} ENOENT`)
      expect(fs.existsSync(path.join(dir, "a"))).toBe(false)
    }))

  it.scoped("passes on mkfifo's own error, naming it mkfifo, with the path as it is", () =>
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
})
