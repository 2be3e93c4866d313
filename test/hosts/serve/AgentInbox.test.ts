/**
 * A serve agent's inbox while its Idempotency-Keys cannot be written, on a
 * real directory: a delivered message whose key is not recorded stays in
 * the journal (a restart would answer it again and record the key), and at
 * the stop, once the key can be written, it is recorded first and the
 * journal then lets the message go.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Scope } from "effect"
import * as AgentInbox from "../../../src/hosts/serve/AgentInbox.js"
import * as IdempotencyStore from "../../../src/hosts/serve/IdempotencyStore.js"
import * as Inbox from "../../../src/memory/Inbox.js"

/** How many messages a new start would find left unanswered in the journal of `dir`. */
const leftInJournal = (dir: string) => Effect.scoped(Effect.map(Inbox.make(dir), (inbox) => inbox.recovered.length))

describe("AgentInbox", () => {
  it.effect("keeps a delivered message while its key cannot be written; at the stop, records the key, then lets the message go", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-agent-inbox-"))
      const keys = path.join(dir, IdempotencyStore.FILE)
      const scope = yield* Scope.make()
      const inbox = yield* Inbox.make(dir).pipe(Scope.provide(scope))
      const idempotency = yield* IdempotencyStore.open(dir, 10)
      const tracked = yield* AgentInbox.make(inbox, idempotency).pipe(Scope.provide(scope))

      // A directory where the keys' file goes: every write of it fails.
      fs.mkdirSync(keys)
      const message = { channel: "http", text: "Remember this.", idempotencyKey: "k1" }
      const pending = yield* inbox.acceptJournaled(message)
      yield* idempotency.remember("k1", { reply: "Noted.", stored: true, request: IdempotencyStore.requestOf(message) })
      expect(idempotency.unwritten("k1")).toBe(true)
      yield* tracked.delivered(pending)
      expect(yield* leftInJournal(dir)).toBe(1)

      // Writable again; the stop records the key, then releases the message.
      fs.rmdirSync(keys)
      yield* Scope.close(scope, Exit.void)
      expect(idempotency.unwritten("k1")).toBe(false)
      const reopened = yield* IdempotencyStore.open(dir, 10)
      expect(Option.map(reopened.lookup("k1"), (remembered) => remembered.reply)).toEqual(Option.some("Noted."))
      expect(yield* leftInJournal(dir)).toBe(0)
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})
