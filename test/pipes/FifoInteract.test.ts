import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Stream } from "effect"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import * as InteractFifo from "../../src/pipes/FifoInteract.js"
import { linesFrom, mkfifo, sh, spawnScoped, takeN, tempDir } from "../support/FifoKit.js"

const setup = Effect.gen(function*() {
  const dir = yield* tempDir
  const paths = yield* makeRuntimeDir(path.join(dir, "run"))
  const interact = yield* InteractFifo.make({ paths })
  return { dir, paths, interact }
})

describe("FIFO interact", () => {
  it.effect("reads messages from writers that open interact_in once per message, skipping malformed lines", () =>
    Effect.gen(function*() {
      const { interact, paths } = yield* setup
      const env = { P: paths.interactIn }
      yield* sh(`printf 'cli\\tHello\\n' > "$P"`, env)
      yield* sh(`printf 'no tab on this line\\n' > "$P"`, env)
      yield* sh(`printf '42\\ttwo\\\\nlines and a \\\\\\\\ backslash\\n' > "$P"`, env)
      yield* sh(`printf 'cli\\tone\\ncli\\ttwo\\n' > "$P"`, env)
      const messages = yield* interact.messages.pipe(Stream.take(4), Stream.runCollect)
      expect([...messages]).toEqual([
        { channel: "cli", text: "Hello" },
        { channel: "42", text: "two\nlines and a \\ backslash" },
        { channel: "cli", text: "one" },
        { channel: "cli", text: "two" }
      ])
    }))

  it.effect("loses nothing between one consumer of the messages and the next", () =>
    Effect.gen(function*() {
      const { interact, paths } = yield* setup
      yield* sh(`printf 'cli\\tone\\ncli\\ttwo\\ncli\\tthr' > "$P"; printf 'ee\\n' > "$P"`, { P: paths.interactIn })
      const first = yield* interact.messages.pipe(Stream.take(1), Stream.runCollect)
      const rest = yield* interact.messages.pipe(Stream.take(2), Stream.runCollect)
      expect([...first, ...rest].map((message) => message.text)).toEqual(["one", "two", "three"])
    }))

  it.effect("keeps replies for a reader that comes later and reopens interact_out for every line", () =>
    Effect.gen(function*() {
      const { interact, paths } = yield* setup
      yield* interact.send({ channel: "cli", text: "first\nreply" })
      yield* interact.send({ channel: "cli", text: "second\treply" })
      yield* interact.send({ channel: "7", text: "third" })
      const seen = yield* sh(`for i in 1 2 3; do IFS= read -r l < "$P"; printf '%s|' "$l"; done`, {
        P: paths.interactOut
      })
      expect(seen).toBe("cli\tfirst\\nreply|cli\tsecond\\treply|7\tthird|")
    }))

  it.effect("delivers every reply to a `cat interact_out` reader", () =>
    Effect.gen(function*() {
      const { dir, interact, paths } = yield* setup
      const observed = path.join(dir, "observed")
      yield* mkfifo(observed)
      const lines = yield* linesFrom(observed)
      yield* spawnScoped("/bin/sh", { P: paths.interactOut, O: observed }, ["-c", "exec cat \"$P\" > \"$O\""])
      for (let i = 1; i <= 50; i++) yield* interact.send({ channel: "cli", text: `reply ${i}` })
      const replies = yield* takeN(lines, 50)
      expect(replies).toEqual(Array.from({ length: 50 }, (_, i) => `cli\treply ${i + 1}`))
    }))

  it.effect("refuses a reply whose channel would break the line", () =>
    Effect.gen(function*() {
      const { interact } = yield* setup
      const error = yield* Effect.flip(interact.send({ channel: "a\tb", text: "x" }))
      expect(error._tag).toBe("InteractError")
      expect(error.message).toContain("tab or line break")
    }))
})
