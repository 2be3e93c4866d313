import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Option, Schedule } from "effect"
import * as Agent from "../../../src/agent/Agent.js"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import { text } from "../../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import { Compactor } from "../../../src/agent/Compactor.js"
import { Inbox, type Pending } from "../../../src/memory/Inbox.js"
import { encodeLine, Memory } from "../../../src/memory/Memory.js"
import * as SqlAgentMemory from "../../../src/hosts/cluster/SqlAgentMemory.js"
import * as SqlUsageLedger from "../../../src/usage/SqlUsageLedger.js"
import { usePostgres } from "../../support/Postgres.js"
import { freshDatabase, migrated } from "./SqlKit.js"

const server = usePostgres()

const settings = ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([
  ["HISTORY_MAX", "4"],
  ["HISTORY_KEEP", "2"],
  ["PLANCKCLAW_PROMPT_CACHE", "0"],
  ["PLANCKCLAW_BRAIN", "scripted"]
])), { preserveEmptyStrings: true })

const lines = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? "user" as const : "assistant" as const, content: `m${i}` }))

/** The agent's memory layers on a fresh database, with a scripted brain; `retry` short for the crash tests. */
const setup = (script: ReadonlyArray<ScriptedBrain.ScriptStep>, retry = Schedule.recurs(2)) =>
  Effect.gen(function*() {
    const url = yield* freshDatabase(yield* server)
    const brain = yield* ScriptedBrain.make(script)
    const memory = SqlAgentMemory.layer("alice", { retry })
    const context = yield* Layer.build(
      Agent.layer.pipe(
        Layer.provideMerge(memory),
        Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
        Layer.provideMerge(migrated(url)),
        Layer.provide(ConfigProvider.layer(settings))
      )
    )
    return { context, brain, sql: Context.get(context, SqlClient.SqlClient) }
  })

const historyOf = (sql: SqlClient.SqlClient) =>
  sql<{ role: string; content: string }>`SELECT role, content FROM planckclaw_history WHERE agent_id = 'alice' ORDER BY seq`
const summaryOf = (sql: SqlClient.SqlClient) =>
  Effect.map(sql<{ summary: string | null }>`SELECT summary FROM planckclaw_agents WHERE agent_id = 'alice'`, (rows) => rows[0]?.summary)

describe("SQL memory: compaction", () => {
  it.live("folds the old lines into the summary in one commit and keeps the tail", () =>
    Effect.scoped(Effect.gen(function*() {
      const { context, brain, sql } = yield* setup([text("Marc likes dice.")])
      const memory = Context.get(context, Memory)
      yield* memory.append(lines(6))
      const report = yield* Context.get(context, Compactor).compactNow
      expect(Option.map(report, (r) => [r.summarised, r.kept])).toEqual(Option.some([4, 2]))
      const requests = yield* brain.requests
      expect(requests[0]?.messages[0]?.content).toContain(lines(4).map(encodeLine).join("\n"))
      expect(yield* summaryOf(sql)).toBe("Marc likes dice.\n")
      expect(yield* historyOf(sql)).toEqual(lines(6).slice(4))
      const snapshot = yield* memory.snapshot(10)
      expect(snapshot.summary).toBe("Marc likes dice.")
      // The compaction's answer is in the usage ledger.
      const usage = yield* SqlUsageLedger.read(sql, "alice")
      expect(usage.map((line) => [line.kind, line.brain])).toEqual([["compaction", "scripted"]])
    })))

  it.live("a statement failing inside the commit leaves the old history and summary intact", () =>
    Effect.scoped(Effect.gen(function*() {
      const { context, sql } = yield* setup([text("never kept")])
      yield* Context.get(context, Memory).append(lines(6))
      // The summary's UPDATE fails after the DELETE of the folded rows ran in the same transaction.
      yield* sql`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'disk on fire'; END $$`
      yield* sql`CREATE TRIGGER refuse BEFORE UPDATE OF summary ON planckclaw_agents FOR EACH ROW EXECUTE FUNCTION refuse()`
      const outcome = yield* Effect.result(Context.get(context, Compactor).compactNow)
      expect(outcome._tag).toBe("Failure")
      expect(JSON.stringify(outcome)).toContain("disk on fire")
      expect(yield* historyOf(sql)).toEqual(lines(6))
      expect(yield* summaryOf(sql)).toBe(null)
    })))

  it.live("a connection killed inside the commit leaves the old state intact", () =>
    Effect.scoped(Effect.gen(function*() {
      const { context, sql } = yield* setup([text("never kept"), text("kept")])
      yield* Context.get(context, Memory).append(lines(6))
      // The server ends the committing session itself, mid-transaction, as a crash would.
      yield* sql`CREATE FUNCTION die() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$`
      yield* sql`CREATE TRIGGER die BEFORE UPDATE OF summary ON planckclaw_agents FOR EACH ROW EXECUTE FUNCTION die()`
      const outcome = yield* Effect.result(Context.get(context, Compactor).compactNow)
      expect(outcome._tag).toBe("Failure")
      expect(yield* historyOf(sql)).toEqual(lines(6))
      expect(yield* summaryOf(sql)).toBe(null)
      // The lease was given back: once the server lets it, the next compaction commits.
      yield* sql`DROP TRIGGER die ON planckclaw_agents`
      yield* Context.get(context, Compactor).compactNow
      expect(yield* summaryOf(sql)).toBe("kept\n")
      expect(yield* historyOf(sql)).toEqual(lines(6).slice(4))
    })))
})

describe("SQL memory: an agent's turn", () => {
  it.live("answers, stores the exchange, counts usage, and a replayed message is not asked again", () =>
    Effect.scoped(Effect.gen(function*() {
      const { context, brain, sql } = yield* setup([text("hello Marc")])
      const agent = Context.get(context, Agent.Agent)
      const inbox = Context.get(context, Inbox)
      const answer = (pending: Pending) =>
        Effect.flatMap(agent.respond(pending), (outcome) => Effect.as(agent.delivered(pending, outcome), outcome))
      const pending = yield* inbox.accept({ channel: "http", text: "hi", idempotencyKey: "m-1" })
      const first = yield* answer(pending)
      // The same message again (a retry, or a redelivery after a runner died): the decided reply, no new turn.
      const again = yield* inbox.accept({ channel: "http", text: "hi", idempotencyKey: "m-1" })
      expect(again.reply).toEqual(Option.some({ text: "hello Marc", stored: true }))
      const second = yield* answer(again)
      expect([first, second].map((outcome) => Option.map(outcome, ({ reply, stored }) => ({ reply, stored })))).toEqual(
        [Option.some({ reply: "hello Marc", stored: true }), Option.some({ reply: "hello Marc", stored: true })]
      )
      expect((yield* brain.requests).length).toBe(1)
      expect(yield* historyOf(sql)).toEqual([{ role: "user", content: "hi" }, { role: "assistant", content: "hello Marc" }])
      expect((yield* SqlUsageLedger.read(sql, "alice")).map((line) => line.kind)).toEqual(["turn"])
    })))
})
