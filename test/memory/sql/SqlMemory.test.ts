import { describe, expect, it } from "@effect/vitest"
import type * as SqlClient from "effect/sql/SqlClient"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer, Option, type Scope } from "effect"
import * as SqlInbox from "../../../src/memory/sql/SqlInbox.js"
import * as SqlMemory from "../../../src/memory/sql/SqlMemory.js"
import * as SqlMigrations from "../../../src/memory/sql/SqlMigrations.js"
import * as FallbackSoul from "../../../src/memory/FallbackSoul.js"
import { DEFAULT_SOUL } from "../../../src/memory/Memory.js"
import { PROMPT_FILE_MAX_BYTES } from "../../../src/memory/PromptFiles.js"
import { usePostgres } from "../../support/Postgres.js"
import { clientLayer, freshDatabase, migrated, withSql } from "./SqlKit.js"

const server = usePostgres()

const inFreshDatabase = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | Scope.Scope>) =>
  Effect.gen(function*() {
    const url = yield* freshDatabase(yield* server)
    return yield* Effect.scoped(effect).pipe(Effect.provide(migrated(url)))
  })

describe("SqlMemory", () => {
  it.live("an agent without a soul speaks with the host's soul file, read as the file memory reads it, edits seen", () =>
    inFreshDatabase(Effect.gen(function*() {
      const host = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-host-soul-"))
      const file = path.join(host, "soul.md")
      // One reader for the host's agents, as a cluster's store holds it.
      const fallbackSoul = FallbackSoul.reader(file)
      const alice = yield* SqlMemory.make("alice", { fallbackSoul })
      const bob = yield* SqlMemory.make("bob", { fallbackSoul })
      expect((yield* alice.snapshot(10)).soul).toBe(DEFAULT_SOUL)
      fs.writeFileSync(file, "host persona A\n")
      expect((yield* alice.snapshot(10)).soul).toBe("host persona A")
      expect((yield* bob.snapshot(10)).soul).toBe("host persona A")
      fs.writeFileSync(file, "host persona B, longer\n")
      expect((yield* bob.snapshot(10)).soul).toBe("host persona B, longer")
      // A link is never followed, as for soul.md: the built-in persona.
      fs.writeFileSync(path.join(host, "elsewhere.md"), "followed a link")
      fs.rmSync(file)
      fs.symlinkSync(path.join(host, "elsewhere.md"), file)
      expect((yield* alice.snapshot(10)).soul).toBe(DEFAULT_SOUL)
      // Over the limit: refused, saying so, rather than sent whole to the brain.
      fs.rmSync(file)
      fs.writeFileSync(file, "x".repeat(PROMPT_FILE_MAX_BYTES + 1))
      const refused = yield* Effect.flip(alice.snapshot(10))
      expect(refused.message).toContain(`${file} is ${PROMPT_FILE_MAX_BYTES + 1} bytes`)
      fs.rmSync(host, { recursive: true, force: true })
    })))

  it.live("appends, reads the tail in order and counts lines like the files", () =>
    inFreshDatabase(Effect.gen(function*() {
      const memory = yield* SqlMemory.make("alice")
      const empty = yield* memory.snapshot(10)
      expect(empty).toEqual({ soul: DEFAULT_SOUL, summary: "", history: [] })
      expect(yield* memory.hasMoreLinesThan(0)).toBe(false)
      yield* memory.append([{ role: "user", content: "héllo \u0000 \"quoted\"\n" }, { role: "assistant", content: "hi 👋" }])
      yield* memory.append([{ role: "user", content: "2" }, { role: "assistant", content: "two" }])
      const snapshot = yield* memory.snapshot(3)
      expect(snapshot.history).toEqual([
        { role: "assistant", content: "hi 👋" },
        { role: "user", content: "2" },
        { role: "assistant", content: "two" }
      ])
      expect((yield* memory.snapshot(10)).history[0]).toEqual({ role: "user", content: "héllo \u0000 \"quoted\"\n" })
      expect(yield* memory.hasMoreLinesThan(3)).toBe(true)
      expect(yield* memory.hasMoreLinesThan(4)).toBe(false)
      // Another agent's memory is its own.
      const bob = yield* SqlMemory.make("bob")
      expect((yield* bob.snapshot(10)).history).toEqual([])
      expect(memory.directory.startsWith("/dev/null/")).toBe(true)
    })))

  it.live("stores a keyed exchange once, however often it is replayed", () =>
    inFreshDatabase(Effect.gen(function*() {
      const memory = yield* SqlMemory.make("alice")
      const exchange = [{ role: "user", content: "same" }, { role: "assistant", content: "same" }] as const
      yield* memory.append(exchange, { exchange: "k1" })
      yield* memory.append(exchange, { exchange: "k1" })
      yield* memory.append(exchange, { exchange: "k2" })
      yield* memory.append(exchange, { unlessLast: true })
      expect((yield* memory.snapshot(10)).history).toHaveLength(4)
    })))

  it.live("migrations run once however often the layer is built, and runners may start together", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase(yield* server)
      const client = clientLayer(url)
      yield* Effect.all([
        Layer.build(SqlMigrations.layer.pipe(Layer.provide(client))),
        Layer.build(SqlMigrations.layer.pipe(Layer.provide(client))),
        Layer.build(SqlMigrations.layer.pipe(Layer.provide(client)))
      ], { concurrency: 3 }).pipe(Effect.scoped)
      const applied = yield* withSql((sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM planckclaw_migrations`).pipe(
        Effect.provide(client)
      )
      expect(applied).toEqual([{ n: Object.keys(SqlMigrations.migrations).length }])
    }))

  it.live("the inbox: a new instance recovers what was left unanswered, with decided replies, and the unstored backlog", () =>
    inFreshDatabase(Effect.gen(function*() {
      const first = yield* SqlInbox.make("alice")
      const answered = yield* first.accept({ channel: "c", text: "answered, not delivered" })
      yield* first.answered(answered, "the reply", true)
      const waiting = yield* first.accept({ channel: "c", text: "never answered" })
      const unstored = yield* first.accept({ channel: "c", text: "not stored" })
      yield* first.unstored(unstored, "kept reply")
      yield* first.delivered(unstored)
      const done = yield* first.accept({ channel: "c", text: "done" })
      yield* first.delivered(done)

      const second = yield* SqlInbox.make("alice")
      expect(second.recovered.map((p) => [p.id, p.text, p.reply])).toEqual([
        [answered.id, "answered, not delivered", Option.some({ text: "the reply", stored: true })],
        [waiting.id, "never answered", Option.none()]
      ])
      const backlog = yield* second.backlog
      expect(backlog.map((p) => [p.text, p.reply])).toEqual([["not stored", Option.some({ text: "kept reply", stored: true })]])
      yield* second.stored(backlog[0]!)
      expect(yield* (yield* SqlInbox.make("alice")).backlog).toEqual([])
      // A host whose messages are redelivered by the cluster recovers none itself.
      expect((yield* SqlInbox.make("alice", { recover: false })).recovered).toEqual([])
    })))
})
