/**
 * A run checks its memory directory once: MemoryHold probes it before taking
 * the run lock, and the memory layer's own `ensureWritable` on the same
 * directory is then skipped while the run holds it. A directory nobody holds
 * (an agent of `serve`, `planckclaw compact`) is still probed every time.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Memory from "../../src/memory/Memory.js"
import * as RunHeld from "../../src/memory/RunHeld.js"
import { tempDir } from "../support/Sandbox.js"

describe("ensureWritable under a run's hold", () => {
  it.effect("skips the probe of a held directory, and probes it again once released", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir()
      // Not there yet: the probe would make it, so whether it exists tells whether the probe ran.
      const directory = path.join(parent, "memory")
      const release = RunHeld.holdForRun(directory)
      yield* Memory.ensureWritable(directory)
      expect(fs.existsSync(directory)).toBe(false)
      release()
      yield* Memory.ensureWritable(directory)
      expect(fs.statSync(directory).isDirectory()).toBe(true)
    }))

  it.effect("still refuses a symbolic link in a directory nobody holds", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const history = path.join(directory, "history.jsonl")
      fs.symlinkSync(path.join(directory, "elsewhere"), history)
      const refused = yield* Effect.flip(Memory.ensureWritable(directory))
      expect(refused.message).toBe(`${history} is a symbolic link; refusing to follow it (make it a regular file)`)
    }))
})
