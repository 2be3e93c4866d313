/**
 * What the catch-up (letting pending inotify events in before a scan) is
 * paid for: once per list, never again for the tool calls of the turn that
 * listed, whose scan still sees every change the watch reported since.
 * Counted with a catch-up that tallies its uses and then waits as the real one.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as Scripts from "../../src/claws/ScriptClaws.js"
import * as Sandbox from "../support/Sandbox.js"

const tempDir = Sandbox.tempDir("planckclaw-catchup-")
const old = new Date("2020-01-01T00:00:00Z")

const writeOld = (dir: string, file: string, body: string) =>
  Effect.sync(() => {
    const path = Path.join(dir, file)
    Fs.writeFileSync(path, body, { mode: 0o755 })
    Fs.utimesSync(path, old, old)
  })

const settings = (directory: string): Scripts.ScriptsConfig => ({
  directory,
  timeout: Duration.seconds(30),
  outputMax: 16_384,
  withheldSecrets: []
})

/** Two turns of the event loop, as ScriptClaws waits, counted. */
const countingCatchUp = () => {
  const count = { value: 0 }
  const wait = Effect.async<void>((resume) => {
    count.value++
    setImmediate(() => setImmediate(() => resume(Effect.void)))
  })
  return { count, wait }
}

describe("Script claws: the catch-up before a scan", () => {
  it.scoped("a list waits once; the turn's tool calls do not wait again", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeOld(dir, "echo.sh", `#!/bin/sh\n#TOOLS:{"name":"say","description":"d"}\necho said\n`)
      const { count, wait } = countingCatchUp()
      const claws = yield* Scripts.makeWatched(settings(dir), undefined, wait)
      // The first list starts the watch (and stats every claw): nothing to catch up with yet.
      expect((yield* claws.list).tools.map((t) => t.name)).toEqual(["say"])
      expect(count.value).toBe(0)
      expect((yield* claws.list).tools.map((t) => t.name)).toEqual(["say"])
      expect(count.value).toBe(1)
      expect(yield* claws.call("say", {})).toEqual({ content: "said", isError: false })
      expect(yield* claws.call("say", {})).toEqual({ content: "said", isError: false })
      expect(count.value).toBe(1)
    }))

  it.scoped("a call still sees a claw added after the list, once its event is in", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeOld(dir, "a.sh", `#!/bin/sh\n#TOOLS:{"name":"first","description":"d"}\necho a\n`)
      const claws = yield* Scripts.makeWatched(settings(dir))
      expect((yield* claws.list).tools.map((t) => t.name)).toEqual(["first"])
      yield* writeOld(dir, "b.sh", `#!/bin/sh\n#TOOLS:{"name":"second","description":"d"}\necho b\n`)
      // The next list lets the event in; the call after it finds the new claw.
      expect((yield* claws.list).tools.map((t) => t.name)).toEqual(["first", "second"])
      expect(yield* claws.call("second", {})).toEqual({ content: "b", isError: false })
      // A claw removed: the call's own scan (a stat of the directory) sees it gone.
      yield* Effect.sync(() => Fs.rmSync(Path.join(dir, "b.sh")))
      expect(yield* claws.call("second", {})).toEqual({ content: "Unknown tool: second", isError: true })
    }))
})
