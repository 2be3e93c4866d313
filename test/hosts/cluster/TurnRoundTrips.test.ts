/**
 * What a started agent's turn sends PostgreSQL, through a real runner (the
 * built command's cluster host, test/hosts/cluster/runner.mjs): the
 * database logs every statement of its own (log_statement), and the test
 * reads the turn's from the server's log. No transaction of several round
 * trips: the engine's final reply is one statement (ReplyStatement), the
 * turn's writes one more (TurnWrites), its reads one (TurnReads).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { usePostgres } from "../../support/Postgres.js"
import { post, type Runner, startRunner } from "./Runners.js"

const DATABASE = "cluster_round_trips"
const postgres = usePostgres({ database: DATABASE })
const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-cluster-round-trips-"))
let runner: Runner | undefined

beforeAll(async () => {
  const server = await Effect.runPromise(postgres)
  // Before the runner connects: its sessions log every statement.
  await Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`ALTER DATABASE ${DATABASE} SET log_statement = 'all'`)).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(server.url) }))
  ))
  runner = await startRunner({ PLANCKCLAW_DATABASE_URL: server.url, PLANCKCLAW_DIR: path.join(work, "memory") })
}, 90_000)

afterAll(async () => {
  await runner?.kill("SIGKILL")
  fs.rmSync(work, { recursive: true, force: true })
})

/** The statements the server logged while `during` ran, each whole (a statement's later lines belong to it). */
const statementsDuring = async (during: () => Promise<unknown>) => {
  const server = await Effect.runPromise(postgres)
  const before = (await Effect.runPromise(server.log)).length
  await during()
  const entries = (await Effect.runPromise(server.log)).slice(before).split(/\n(?=\d{4}-\d\d-\d\d )/)
  return entries.filter((entry) => /LOG: {2}(statement|execute [^:]*): /.test(entry)).map((entry) => entry.replace(/^.*?(statement|execute [^:]*): /s, ""))
    // The runner's own rounds, whatever its agents do: the schedules' poll (ClusterSchedules).
    .filter((statement) => !statement.includes("planckclaw_schedules"))
}

describe("a cluster turn's round trips", () => {
  it("a started agent's turn runs no transaction of several statements; its reply is stored in one", async () => {
    expect((await post(runner!.httpPort, "alice", "hi")).status).toBe(200)
    let status = 0
    const statements = await statementsDuring(async () => {
      status = (await post(runner!.httpPort, "alice", "again")).status
    })
    expect(status).toBe(200)
    expect(statements.filter((statement) => /^(BEGIN|COMMIT)/.test(statement))).toEqual([])
    // The engine's final reply: the message marked processed and the reply stored, together.
    const replies = statements.filter((statement) => /INSERT INTO "?cluster_replies/.test(statement))
    expect(replies).toHaveLength(1)
    expect(replies[0]).toMatch(/UPDATE cluster_messages SET processed = TRUE[\s\S]*INSERT INTO cluster_replies/)
    // The turn's own: the decided reply, the usage and the exchange in one.
    const writes = statements.filter((statement) => /^(INSERT|UPDATE|WITH)[\s\S]*planckclaw_/.test(statement))
    expect(writes).toHaveLength(1)
    expect(writes[0]).toMatch(/planckclaw_cluster_turns[\s\S]*planckclaw_exchanges[\s\S]*planckclaw_history/)
    // And what it reads: the journal's decided reply with the agent's row and history tail, in one.
    const reads = statements.filter((statement) => /^SELECT[\s\S]*planckclaw_/.test(statement))
    expect(reads).toHaveLength(1)
    expect(reads[0]).toMatch(/planckclaw_history[\s\S]*planckclaw_cluster_turns[\s\S]*planckclaw_agents/)
  }, 60_000)

  it("a new agent's first turn, once another agent has had one, reads and writes as a started agent's", async () => {
    let status = 0
    const statements = await statementsDuring(async () => {
      status = (await post(runner!.httpPort, "bob", "hello")).status
    })
    expect(status).toBe(200)
    const ours = statements.filter((statement) => /planckclaw_/.test(statement))
    // Its row made (SqlMemory at start), then one read and one write.
    expect(ours).toHaveLength(3)
    expect(ours[0]).toMatch(/^INSERT INTO planckclaw_agents/)
  }, 60_000)
})
