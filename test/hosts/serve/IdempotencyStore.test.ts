/**
 * The per-agent file of replies by Idempotency-Key, on a real directory:
 * kept across a reopen with the message each answered, a torn last line cut
 * off, the file rewritten with the newest keys once it holds twice the limit,
 * and a planted link refused rather than followed.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as IdempotencyStore from "../../../src/hosts/serve/IdempotencyStore.js"

const directory = () => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-idem-"))
const fileIn = (dir: string) => path.join(dir, IdempotencyStore.FILE)
const reply = (text: string) => ({ reply: text, stored: true, request: IdempotencyStore.requestOf({ channel: "http", text }) })

describe("IdempotencyStore", () => {
  it.effect("keeps each reply with its message across a reopen, and cuts a torn last line off", () =>
    Effect.gen(function*() {
      const dir = directory()
      const store = yield* IdempotencyStore.open(dir, 10)
      yield* store.remember("a", reply("one"))
      yield* store.remember("b", { reply: "two", stored: false })
      fs.appendFileSync(fileIn(dir), "{\"key\":\"c\",\"rep")
      const again = yield* IdempotencyStore.open(dir, 10)
      expect(again.lookup("a")).toEqual(Option.some(reply("one")))
      expect(again.lookup("b")).toEqual(Option.some({ reply: "two", stored: false, request: undefined }))
      expect(again.lookup("c")).toEqual(Option.none())
      expect(fs.readFileSync(fileIn(dir), "utf8").endsWith("\n")).toBe(true)
      expect(fs.statSync(fileIn(dir)).mode & 0o777).toBe(0o600)
    }))

  it.effect("rewrites the file with the newest keys once it holds twice the limit", () =>
    Effect.gen(function*() {
      const dir = directory()
      const store = yield* IdempotencyStore.open(dir, 2)
      for (const key of ["k1", "k2", "k3", "k4", "k5"]) yield* store.remember(key, reply(key))
      const lines = fs.readFileSync(fileIn(dir), "utf8").split("\n").filter((line) => line !== "")
      expect(lines.map((line) => JSON.parse(line).key)).toEqual(["k4", "k5"])
      const again = yield* IdempotencyStore.open(dir, 2)
      expect(Option.isNone(again.lookup("k3"))).toBe(true)
      expect(again.lookup("k5")).toEqual(Option.some(reply("k5")))
    }))

  it.effect("refuses a planted link, naming it, and writes nothing through it", () =>
    Effect.gen(function*() {
      const dir = directory()
      const target = path.join(dir, "elsewhere")
      fs.writeFileSync(target, "")
      fs.symlinkSync(target, fileIn(dir))
      const refused = yield* Effect.flip(IdempotencyStore.open(dir, 10))
      expect(refused.message).toBe(`cannot read ${fileIn(dir)}: ${fileIn(dir)} is a symbolic link; refusing to follow it (make it a regular file)`)
      expect(fs.readFileSync(target, "utf8")).toBe("")
    }))

  it.effect("refuses a link to nothing as well: an absent file is seen by lstat, which does not follow it", () =>
    Effect.gen(function*() {
      const dir = directory()
      const target = path.join(dir, "not-yet")
      fs.symlinkSync(target, fileIn(dir))
      const refused = yield* Effect.flip(IdempotencyStore.open(dir, 10))
      expect(refused.message).toBe(`cannot read ${fileIn(dir)}: ${fileIn(dir)} is a symbolic link; refusing to follow it (make it a regular file)`)
      expect(fs.existsSync(target)).toBe(false)
    }))
})
