/**
 * Texts holding a NUL character in memory in PostgreSQL, whose text columns
 * refuse one: a compaction's summary (a model can answer one), a message,
 * its channel and its reply in the inbox are stored and read back exactly,
 * as the files keep them; an exchange holding one is stored and replayed
 * exactly; a brain or model name holding one is kept with U+FFFD rather
 * than its usage row lost. A database an earlier version made gets the new
 * columns, and its rows read as they were written.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Option, Schedule, type Scope } from "effect"
import * as Agent from "../../../src/agent/Agent.js"
import { Compactor } from "../../../src/agent/Compactor.js"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import { text } from "../../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import * as SqlAgentMemory from "../../../src/hosts/cluster/SqlAgentMemory.js"
import { Inbox } from "../../../src/memory/Inbox.js"
import { Memory } from "../../../src/memory/Memory.js"
import * as SqlForget from "../../../src/memory/sql/SqlForget.js"
import * as SqlInbox from "../../../src/memory/sql/SqlInbox.js"
import * as SqlMemory from "../../../src/memory/sql/SqlMemory.js"
import * as SqlMigrations from "../../../src/memory/sql/SqlMigrations.js"
import * as SqlTransfer from "../../../src/memory/sql/SqlTransfer.js"
import * as SqlUsageLedger from "../../../src/usage/SqlUsageLedger.js"
import { usePostgres } from "../../support/Postgres.js"
import { tempDir } from "../../support/Sandbox.js"
import { clientLayer, freshDatabase, migrated, withSql } from "./SqlKit.js"

const server = usePostgres()

const NUL = "\u0000"

const settings = ConfigProvider.fromEnvRecord({
  HISTORY_MAX: "4",
  HISTORY_KEEP: "2",
  PLANCKCLAW_PROMPT_CACHE: "0",
  PLANCKCLAW_BRAIN: "scripted"
}, { preserveEmptyStrings: true })

const lines = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? "user" as const : "assistant" as const, content: `m${from + i}` }))

/** Alice's agent on a fresh database: memory, inbox, compactor and usage in it, with a scripted brain. */
const agentOn = (script: ReadonlyArray<ScriptedBrain.ScriptStep>) =>
  Effect.gen(function*() {
    const url = yield* freshDatabase(yield* server)
    const brain = yield* ScriptedBrain.make(script)
    const context = yield* Layer.build(
      Agent.layer.pipe(
        Layer.provideMerge(SqlAgentMemory.layer("alice", { retry: Schedule.recurs(1) })),
        Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
        Layer.provideMerge(migrated(url)),
        Layer.provide(ConfigProvider.layer(settings))
      )
    )
    return { context, brain, sql: Context.get(context, SqlClient.SqlClient) }
  })

const inFreshDatabase = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | Scope.Scope>) =>
  Effect.gen(function*() {
    const url = yield* freshDatabase(yield* server)
    return yield* Effect.scoped(effect).pipe(Effect.provide(migrated(url)))
  })

const plainSummary = withSql((sql) =>
  Effect.map(sql<{ summary: string | null }>`SELECT summary FROM planckclaw_agents WHERE agent_id = 'alice'`, (rows) => rows[0]?.summary)
)

describe("SQL memory: texts holding a NUL", () => {
  it.live("a compaction's summary is stored exactly; the next compaction folds it and commits; export and forget keep it", () =>
    Effect.scoped(Effect.gen(function*() {
      const first = `Marc likes dice.${NUL} (a NUL the model echoed)`
      const { context, brain, sql } = yield* agentOn([text(first), text("Marc likes dice and chess.")])
      const memory = Context.get(context, Memory)
      const compactor = Context.get(context, Compactor)
      yield* memory.append(lines(6))
      expect(Option.map(yield* compactor.compactNow, (report) => report.kept)).toEqual(Option.some(2))
      expect((yield* memory.snapshot(10)).summary).toBe(first)
      // What a runner of an earlier version reads: the same text, each NUL as U+FFFD.
      expect(yield* plainSummary.pipe(Effect.provideService(SqlClient.SqlClient, sql))).toBe(`${first.replace(NUL, "\uFFFD")}\n`)

      // The next compaction is not failed by it: the brain is given it exactly, and the new summary replaces it.
      yield* memory.append(lines(4, 6))
      expect(Option.isSome(yield* compactor.compactNow)).toBe(true)
      expect(JSON.stringify((yield* brain.requests)[1]?.messages)).toContain(JSON.stringify(first).slice(1, -1))
      expect((yield* memory.snapshot(10)).summary).toBe("Marc likes dice and chess.")

      // A summary holding a NUL is exported byte for byte, and archived exactly by /forget.
      yield* sql`UPDATE planckclaw_agents SET summary = ${`a\uFFFDb\n`}, summary_json = ${JSON.stringify(`a${NUL}b\n`)}
        WHERE agent_id = 'alice'`
      const out = path.join(yield* tempDir(), "out")
      yield* SqlTransfer.exportAgent("alice", out).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      expect(fs.readFileSync(path.join(out, "summary.md"), "utf8")).toBe(`a${NUL}b\n`)
      expect((yield* memory.forgetPreview).summaryBytes).toBe(4)
      yield* memory.forget("2026-11-30T19-00-00Z")
      const archived = yield* SqlForget.readArchive(sql, "alice", "2026-11-30T19-00-00Z")
      expect(archived.archive.map((row) => row.summary)).toEqual([`a${NUL}b\n`])
      expect(yield* plainSummary.pipe(Effect.provideService(SqlClient.SqlClient, sql))).toBeNull()
    })), 60_000)

  it.live("a message and a reply holding one are journaled, stored, delivered and given back to a retry exactly", () =>
    Effect.scoped(Effect.gen(function*() {
      const reply = `echo: a${NUL}b`
      const { context, brain } = yield* agentOn([text(reply)])
      const agent = Context.get(context, Agent.Agent)
      const inbox = Context.get(context, Inbox)
      const pending = yield* inbox.accept({ channel: "http", text: `a${NUL}b`, idempotencyKey: "m-1" })
      // Journaled in the database (a row's id), not only in this process.
      expect(pending.id).toBeGreaterThan(0)
      const outcome = yield* agent.respond(pending)
      expect(Option.map(outcome, (o) => [o.reply, o.stored])).toEqual(Option.some([reply, true]))
      yield* agent.delivered(pending, outcome)
      // The agent reads a message without its control characters (Interact.ts); the reply is stored as the model gave it.
      expect((yield* Context.get(context, Memory).snapshot(10)).history).toEqual([
        { role: "user", content: "ab" },
        { role: "assistant", content: reply }
      ])
      // The same message again: its decided reply, exactly, and no second turn.
      const again = yield* inbox.accept({ channel: "http", text: `a${NUL}b`, idempotencyKey: "m-1" })
      expect(again.reply).toEqual(Option.some({ text: reply, stored: true }))
      expect((yield* brain.requests).length).toBe(1)
    })), 60_000)

  it.live("the inbox: a new instance recovers messages, channels and replies exactly; a key holding one is not journaled", () =>
    inFreshDatabase(Effect.gen(function*() {
      const first = yield* SqlInbox.make("alice")
      const answered = yield* first.accept({ channel: `c${NUL}`, text: `asked${NUL}` })
      yield* first.answered(answered, `the reply${NUL}`, false)
      const unstored = yield* first.accept({ channel: "c", text: "not stored" })
      expect(yield* first.unstored(unstored, `kept${NUL}reply`)).toBe(true)
      yield* first.delivered(unstored)

      const second = yield* SqlInbox.make("alice")
      expect(second.recovered.map((p) => [p.id, p.channel, p.text, p.reply])).toEqual([
        [answered.id, `c${NUL}`, `asked${NUL}`, Option.some({ text: `the reply${NUL}`, stored: false })]
      ])
      expect((yield* second.backlog).map((p) => p.reply)).toEqual([Option.some({ text: `kept${NUL}reply`, stored: true })])

      // Changed to fit, a key could be another message's: answered in this process, and not journaled.
      const keyed = yield* second.accept({ channel: "c", text: "t", idempotencyKey: `k${NUL}` })
      expect(keyed.id).toBeLessThan(0)
      expect(keyed.idempotencyKey).toBe(`k${NUL}`)
      const rows = yield* withSql((sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM planckclaw_inbox`)
      expect(rows).toEqual([{ n: 2 }])
    })))

  it.live("usage: a brain or model name holding one is kept with U+FFFD, by the recording brain and by an import", () =>
    inFreshDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const answering = yield* ScriptedBrain.make([{ ...text("hi"), model: `broken${NUL}model` }])
      const recording = yield* SqlUsageLedger.recording(answering.service, "alice", `label${NUL}`)
      yield* recording.complete({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
      expect((yield* SqlUsageLedger.read(sql, "alice")).map((line) => [line.brain, line.model])).toEqual([
        ["label\uFFFD", "broken\uFFFDmodel"]
      ])

      const dir = yield* tempDir()
      const usage = { at: "2026-11-30T10:00:00.123Z", kind: "turn", brain: "b", model: `m${NUL}`, ms: 1, input: 1, output: 1, cache_write: 0, cache_read: 0 }
      fs.writeFileSync(path.join(dir, "history.jsonl"), "")
      fs.writeFileSync(path.join(dir, "usage.jsonl"), `${JSON.stringify(usage)}\n`)
      expect((yield* SqlTransfer.importAgent("bob", dir)).usage).toBe(1)
      expect((yield* SqlUsageLedger.read(sql, "bob")).map((line) => line.model)).toEqual(["m\uFFFD"])
    })))

  it.effect("a database an earlier version made gets the new columns; its rows read as they were written", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase(yield* server)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { "4_exact_texts": _, ...earlier } = SqlMigrations.migrations
        yield* Migrator.make({})({ loader: Migrator.fromRecord(earlier), table: SqlMigrations.MIGRATIONS_TABLE })
        // Rows as the earlier version wrote them.
        yield* sql`INSERT INTO planckclaw_agents (agent_id, summary) VALUES ('alice', 'old summary')`
        yield* sql`INSERT INTO planckclaw_inbox (agent_id, key, channel, text, reply) VALUES ('alice', 'k', 'c', 'old text', 'old reply')`

        yield* SqlMigrations.run
        const memory = yield* SqlMemory.make("alice")
        expect((yield* memory.snapshot(10)).summary).toBe("old summary")
        const inbox = yield* SqlInbox.make("alice")
        expect(inbox.recovered.map((p) => [p.channel, p.text, p.reply])).toEqual([
          ["c", "old text", Option.some({ text: "old reply", stored: false })]
        ])
        // A summary an earlier version wrote over one that held a NUL: its own text, not the stale JSON.
        yield* sql`UPDATE planckclaw_agents SET summary = ${"a\uFFFDb"}, summary_json = ${JSON.stringify(`a${NUL}b`)}
          WHERE agent_id = 'alice'`
        expect((yield* memory.snapshot(10)).summary).toBe(`a${NUL}b`)
        yield* sql`UPDATE planckclaw_agents SET summary = 'rewritten' WHERE agent_id = 'alice'`
        expect((yield* memory.snapshot(10)).summary).toBe("rewritten")
      }).pipe(Effect.scoped, Effect.provide(clientLayer(url)))
    }), 60_000)
})
