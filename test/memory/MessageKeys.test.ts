import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Inbox from "../../src/memory/Inbox.js"
import { newKey, randomHex } from "../../src/memory/MessageKeys.js"
import { REPO } from "../support/Cli.js"
import { tempDir } from "../support/Sandbox.js"

const keyShape = /^[0-9a-f]{24}-[0-9a-z]+$/

describe("message keys", () => {
  it.effect("differ across the inboxes of one process, a directory's inbox opened again included", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const other = yield* tempDir()
      const first = yield* Inbox.make(directory)
      const keys = [
        yield* first.accept({ channel: "c", text: "one" }),
        yield* first.accept({ channel: "c", text: "two" }),
        yield* (yield* Inbox.make(directory)).accept({ channel: "c", text: "three" }),
        yield* (yield* Inbox.make(other)).accept({ channel: "c", text: "four" })
      ].map((pending) => pending.key)
      for (const key of keys) expect(key).toMatch(keyShape)
      expect(new Set(keys).size).toBe(keys.length)
    }))

  it("draw another prefix in another process (the built module, as a run uses it)", () => {
    const built = pathToFileURL(path.join(REPO, "dist", "memory", "MessageKeys.js")).href
    const script = `import(${JSON.stringify(built)}).then((keys) => console.log(keys.newKey()))`
    const start = () => execFileSync(process.execPath, ["-e", script], { encoding: "utf8" }).trim()
    const [a, b] = [start(), start()]
    expect(a).toMatch(keyShape)
    expect(b).toMatch(keyShape)
    expect(a.split("-")[0]).not.toBe(b.split("-")[0])
    expect(newKey().split("-")[0]).not.toBe(a.split("-")[0])
  })

  it.effect("take their random bytes from the Web Crypto global where the device cannot be read whole", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const empty = path.join(directory, "empty")
      fs.writeFileSync(empty, "")
      const drawn = [randomHex(12, path.join(directory, "missing")), randomHex(12, empty), randomHex(12)]
      for (const hex of drawn) expect(hex).toMatch(/^[0-9a-f]{24}$/)
      expect(new Set(drawn).size).toBe(3)
    }))
})
