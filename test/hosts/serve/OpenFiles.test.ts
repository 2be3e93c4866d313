/** The budget of agents keeping their files open: least recently used closed first, forgotten ones never. */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as OpenFiles from "../../../src/hosts/serve/OpenFiles.js"

const agents = (names: ReadonlyArray<string>) => {
  const closed: Array<string> = []
  const holders = new Map(names.map((name) => [name, { name }]))
  const use = (files: OpenFiles.OpenFiles, name: string) => files.used(holders.get(name)!, Effect.sync(() => closed.push(name)))
  return { closed, holders, use }
}

describe("OpenFiles", () => {
  it.effect("closes the files of the least recently used beyond the budget; a use makes an agent the most recent", () =>
    Effect.gen(function*() {
      const files = OpenFiles.make(2)
      const { closed, use } = agents(["a", "b", "c", "d"])
      yield* use(files, "a")
      yield* use(files, "b")
      expect(closed).toEqual([])
      // a used again: b is now the least recent.
      yield* use(files, "a")
      yield* use(files, "c")
      expect(closed).toEqual(["b"])
      yield* use(files, "d")
      expect(closed).toEqual(["b", "a"])
      expect(files.size()).toBe(2)
    }))

  it.effect("a forgotten agent (stopped: its scope closes its files) is neither counted nor closed", () =>
    Effect.gen(function*() {
      const files = OpenFiles.make(1)
      const { closed, holders, use } = agents(["a", "b"])
      yield* use(files, "a")
      files.forget(holders.get("a")!)
      expect(files.size()).toBe(0)
      yield* use(files, "b")
      expect(closed).toEqual([])
    }))

  it.effect("with a budget of 0 every agent closes its files once used", () =>
    Effect.gen(function*() {
      const files = OpenFiles.make(0)
      const { closed, use } = agents(["a", "b"])
      yield* use(files, "a")
      yield* use(files, "b")
      expect(closed).toEqual(["a", "b"])
      expect(files.size()).toBe(0)
    }))
})
