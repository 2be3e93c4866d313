/**
 * `serve --cluster` shows an agent's schedule as `serve` does
 * (GET /v1/agents/{id}/schedules), read from its row of
 * planckclaw_schedules: one runner on loopback against a throwaway
 * PostgreSQL; an agent without a row has none, a row that does not decode
 * is a 503 naming the row and the reason.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, Layer, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ClusterSchedules from "../../../src/hosts/cluster/ClusterSchedules.js"
import * as ScheduleStore from "../../../src/schedule/ScheduleStore.js"
import { usePostgres } from "../../support/Postgres.js"
import { post, type Runner, startRunner } from "./Runners.js"

const postgres = usePostgres({ database: "cluster_schedule_route" })
const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-cluster-schedule-route-"))
let runner: Runner | undefined

beforeAll(async () => {
  const server = await Effect.runPromise(postgres)
  runner = await startRunner({ PLANCKCLAW_DATABASE_URL: server.url, PLANCKCLAW_DIR: path.join(work, "memory") })
}, 90_000)

afterAll(async () => {
  await runner?.kill("SIGKILL")
  fs.rmSync(work, { recursive: true, force: true })
})

const database = () => Layer.unwrap(Effect.map(postgres, (server) => PgClient.layer({ url: Redacted.make(server.url) })))
const inDatabase = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.runPromise(effect.pipe(Effect.provide(database())))

const getJson = async (target: string) => {
  const response = await fetch(`http://127.0.0.1:${runner!.httpPort}${target}`)
  return { status: response.status, body: (await response.json()) as any }
}

describe("planckclaw serve --cluster: an agent's schedule over HTTP", () => {
  it("lists the entries of the agent's row with their next runs; none without one; a bad row refused with the reason", async () => {
    for (const agent of ["ann", "bob", "cid"]) expect((await post(runner!.httpPort, agent, "hi")).status).toBe(200)
    const now = Date.now()
    const at = new Date(Math.floor((now + 86_400_000) / 1000) * 1000).toISOString()
    const entry = await inDatabase(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      ClusterSchedules.sqlStore(sql, "ann").modify(ScheduleStore.adding({ when: { _tag: "At", at }, text: "call the bank", to: "none" }, now, 65_536))))
    await inDatabase(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`INSERT INTO planckclaw_schedules (agent_id, entries) VALUES ('cid', '{"entries": [{"id": "x1", "when": {"_tag": "Every", "seconds": 0}}]}')`))

    const listed = await getJson("/v1/agents/ann/schedules")
    expect([listed.status, listed.body]).toEqual([200, {
      entries: [{ id: entry.id, when: { _tag: "At", at }, written: `at ${at}`, text: "call the bank", to: "none", created: entry.created, lastRun: null, nextRun: at }]
    }])
    expect(await getJson("/v1/agents/bob/schedules")).toEqual({ status: 200, body: { entries: [] } })
    const refused = await getJson("/v1/agents/cid/schedules")
    expect([refused.status, refused.body.error]).toEqual([503, "unavailable"])
    expect(refused.body.message).toContain("planckclaw_schedules (agent cid) is refused")
    expect((await getJson("/v1/agents/nobody/schedules")).status).toBe(404)
  }, 60_000)
})
