/**
 * A compaction's summary holding a NUL character (a model can answer one),
 * in a cluster over a throwaway PostgreSQL, whose TEXT columns refuse NUL:
 * SQL memory keeps it as JSON beside the plain column (SqlExactText), and
 * every cluster reader gives it back exactly, as the files would: the next
 * turn's system prompt (the summary the journal's lookup brings, TurnReads),
 * the summary route (ClusterRecords) and the summary's size in bytes that
 * status, the agent list and a compaction with nothing to fold answer
 * (AgentStore). A summary an earlier runner wrote over it (the plain column
 * alone) is read as that runner wrote it.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Result, type Scope } from "effect"
import { type BrainService, systemText } from "../../../src/ports/Brain.js"
import * as AgentEntity from "../../../src/hosts/cluster/AgentEntity.js"
import * as AgentStore from "../../../src/hosts/cluster/AgentStore.js"
import * as ClusterRecords from "../../../src/hosts/cluster/ClusterRecords.js"
import * as AgentId from "../../../src/hosts/serve/AgentId.js"
import * as FallbackSoul from "../../../src/memory/FallbackSoul.js"
import * as SqlCompactionLocks from "../../../src/memory/sql/SqlCompactionLocks.js"
import { BUILT_IN } from "../../../src/usage/Prices.js"
import { usePostgres } from "../../support/Postgres.js"
import { freshDatabase, migrated } from "../../memory/sql/SqlKit.js"
import { entity, send } from "./EntityOverPostgres.js"

const server = usePostgres()

const NUL = "\u0000"
const SUMMARY = `The user said hello${NUL} and asked about é.`

/** Answers a compaction with SUMMARY and a turn with an echo; keeps each turn's system prompt. */
const summarising = (systems: Array<string>): BrainService => ({
  complete: (request) =>
    Effect.sync(() => {
      const last = request.messages[request.messages.length - 1]!
      const text = typeof last.content === "string" ? last.content : last.content.map((block) => "text" in block ? block.text : "").join("")
      const folding = text.startsWith("EXISTING SUMMARY:")
      if (!folding) systems.push(systemText(request.system) ?? "")
      return {
        content: [{ type: "text" as const, text: folding ? SUMMARY : `echo ${text}` }],
        stop_reason: "end_turn" as const,
        usage: { input_tokens: 7, output_tokens: 3 }
      }
    })
})

const onFreshDatabase = <A, E>(test: Effect.Effect<A, E, SqlClient.SqlClient | Scope.Scope>) =>
  Effect.flatMap(Effect.flatMap(server, freshDatabase), (url) => Effect.provide(Effect.scoped(test), migrated(url)))

const ALICE = Result.getOrThrow(AgentId.parse("alice"))
const BOB = Result.getOrThrow(AgentId.parse("bob"))

/** The store as the cluster's HTTP routes read it (status, list). */
const storeOn = (sql: SqlClient.SqlClient) =>
  Effect.map(SqlCompactionLocks.make, (compactionLocks) =>
    AgentStore.postgres({
      where: "test",
      defaultSoulFile: "",
      provider: ConfigProvider.fromEnvRecord({}, { preserveEmptyStrings: true }),
      sql,
      compactionLocks
    }))

const compact = (id: string) => Effect.flatMap(AgentEntity.Agent.client, (client) => client(id).Compact())

describe("a compaction's summary holding a NUL in a cluster", () => {
  it.live("reaches the next turn's model, the summary route and the summary's byte count exactly", () =>
    onFreshDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const systems: Array<string> = []
      const stored = `${SUMMARY}\n`
      const exactBytes = Buffer.byteLength(stored, "utf8")
      yield* Effect.gen(function*() {
        for (const [n, text] of ["one", "two", "three"].entries()) {
          expect(yield* send("alice", text, `k${n}`)).toMatchObject({ reply: `echo ${text}`, stored: true })
        }
        expect(yield* compact("alice")).toMatchObject({ compacted: true, summaryBytes: exactBytes })
        // Nothing left to fold: the size is the store's (AgentStore.status), the summary's own bytes.
        expect(yield* compact("alice")).toMatchObject({ compacted: false, summaryBytes: exactBytes })
        expect(yield* send("alice", "four", "k3")).toMatchObject({ reply: "echo four", stored: true })
      }).pipe(Effect.provide(entity(sql, summarising(systems), { settings: { HISTORY_KEEP: "2" } })))
      // The turn after the compaction read its memory with the journal's question (TurnReads).
      expect(systems).toHaveLength(4)
      expect(systems[3]).toContain(`CONVERSATION SUMMARY:\n${SUMMARY}`)

      const records = ClusterRecords.make({ sql, prices: BUILT_IN, hostSoul: FallbackSoul.reader(undefined) })
      expect((yield* records.memory(ALICE)).summary).toBe(stored)
      const store = yield* storeOn(sql)
      expect((yield* store.status(ALICE, false)).summaryBytes).toBe(exactBytes)
      const listed = yield* store.page({ limit: 10 }, () => false)
      expect(listed.agents.map((agent) => [agent.id, agent.summaryBytes])).toEqual([["alice", exactBytes]])
    })), 60_000)

  it.live("written over by an earlier runner (its plain column alone), is read as that runner wrote it", () =>
    onFreshDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const systems: Array<string> = []
      const older = "An earlier runner's summary \uFFFD.\n"
      yield* Effect.gen(function*() {
        yield* send("bob", "one", "k0")
        yield* send("bob", "two", "k1")
        expect(yield* compact("bob")).toMatchObject({ compacted: true })
        // An earlier version's compaction sets `summary` and knows nothing of `summary_json`.
        yield* sql`UPDATE planckclaw_agents SET summary = ${older} WHERE agent_id = 'bob'`
        yield* send("bob", "three", "k2")
      }).pipe(Effect.provide(entity(sql, summarising(systems), { settings: { HISTORY_KEEP: "2" } })))
      expect(systems[2]).toContain(`CONVERSATION SUMMARY:\n${older.trim()}`)
      expect(systems[2]).not.toContain(SUMMARY)

      const records = ClusterRecords.make({ sql, prices: BUILT_IN, hostSoul: FallbackSoul.reader(undefined) })
      expect((yield* records.memory(BOB)).summary).toBe(older)
      const store = yield* storeOn(sql)
      expect((yield* store.status(BOB, false)).summaryBytes).toBe(Buffer.byteLength(older, "utf8"))
    })), 60_000)
})
