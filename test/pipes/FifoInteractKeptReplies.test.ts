/**
 * Replies a FifoInteract leaves unread in interact_out when it closes are
 * kept for the next one (UnreadReplies): whole lines only. A reply whose
 * write had not finished (the pipe was full) was not delivered; its first
 * bytes are dropped, said in the log, and it comes whole when it is sent
 * again, never glued to its own start.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import * as InteractFifo from "../../src/pipes/FifoInteract.js"
import { linesFrom, takeN, tempDir } from "../support/FifoKit.js"
import { captureLogs } from "../support/LogCapture.js"

/** A FifoInteract keeping its unread replies in `kept`, in a scope of its own and a runtime directory of its own. */
const open = (dir: string, name: string, kept: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const paths = yield* makeRuntimeDir(path.join(dir, name)).pipe(Scope.provide(scope))
    const interact = yield* InteractFifo.make({ paths, keepUnread: kept }).pipe(Scope.provide(scope), Effect.orDie)
    return { paths, interact, close: Scope.close(scope, Exit.void) }
  })

describe("FifoInteract, replies unread at its close", () => {
  it.effect("keeps the whole lines, drops the start of a reply only partly written, and the next one sends that reply whole", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const kept = path.join(dir, "unread")
      const logs = yield* captureLogs
      const reply = (said: string) => ({ channel: "cli", text: said.repeat(30_000) })
      const first = yield* open(dir, "first", kept)
      // With nobody reading: A and B fit in the 64 KiB pipe, C in part, its write waiting for room.
      yield* first.interact.send(reply("A"))
      yield* first.interact.send(reply("B"))
      yield* Effect.forkChild(first.interact.send(reply("C")), { startImmediately: true })
      yield* first.close.pipe(Effect.provide(logs.layer))
      expect(fs.readFileSync(kept, "utf8")).toBe(`cli\t${"A".repeat(30_000)}\ncli\t${"B".repeat(30_000)}\n`)
      expect(logs.lines.join("\n")).toMatch(/WARN dropped the last \d+ byte\(s\) unread in .*interact_out, the start of a line whose write had not finished/)

      // The next run: what was kept first, then C (still owed by the inbox, which sends it again).
      const second = yield* open(dir, "second", kept)
      const read = yield* linesFrom(second.paths.interactOut)
      yield* second.interact.send(reply("C"))
      expect(yield* takeN(read, 3)).toEqual(["A", "B", "C"].map((said) => `cli\t${said.repeat(30_000)}`))
      yield* second.close
      expect(fs.existsSync(kept)).toBe(false)
    }))

  it.effect("sends only the whole lines of a file kept by an older version that ends in part of one", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const kept = path.join(dir, "unread")
      fs.writeFileSync(kept, "cli\tkept whole\ncli\tcut sh")
      const next = yield* open(dir, "next", kept)
      const read = yield* linesFrom(next.paths.interactOut)
      yield* next.interact.send({ channel: "cli", text: "owed" })
      expect(yield* takeN(read, 2)).toEqual(["cli\tkept whole", "cli\towed"])
      yield* next.close
    }))
})
