/**
 * A runner SIGKILLed in the middle of a compaction (its brain never answers
 * the summary request), two runner processes on loopback against a
 * throwaway PostgreSQL: the runner its agent fails over to compacts that
 * agent at its first turn there, not once a 15-minute lease has run out.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, Redacted, Schedule } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { usePostgres } from "../../support/Postgres.js"
import { brainCalls, histories } from "./ClusterKit.js"
import { compact, placement, post, type Runner, shardsSpread, startRunner } from "./Runners.js"

const postgres = usePostgres({ database: "cluster_compaction_failover" })

const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-lease-"))
const killedCalls = path.join(work, "killed-calls.log")
const survivorCalls = path.join(work, "survivor-calls.log")
let url = ""
let killed: Runner | undefined
let survivor: Runner | undefined

beforeAll(async () => {
  url = (await Effect.runPromise(postgres)).url
  const env = { PLANCKCLAW_DATABASE_URL: url, PLANCKCLAW_DIR: path.join(work, "memory"), HISTORY_MAX: "4", HISTORY_KEEP: "2" }
  ;[killed, survivor] = await Promise.all([
    startRunner({ ...env, RUNNER_CALLS: killedCalls, RUNNER_SUMMARY_HANGS: "1" }),
    startRunner({ ...env, RUNNER_CALLS: survivorCalls })
  ])
  await Effect.runPromise(shardsSpread(url, 2))
}, 120_000)

afterAll(async () => {
  await Promise.all([killed, survivor].map((runner) => runner?.kill("SIGKILL")))
  fs.rmSync(work, { recursive: true, force: true })
})

/** Summary requests a runner's brain was sent. */
const summaryRequests = (calls: string) => [...brainCalls(calls).keys()].filter((text) => text.startsWith("EXISTING SUMMARY:"))

/** Waits, at most 60 s, until `pid`'s compaction holds the agent's lease and its brain was asked for the summary. */
const compactingOn = (id: string, pid: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql<{ by: string | null }>`SELECT compacting_by AS by FROM planckclaw_agents WHERE agent_id = ${id}`.pipe(
      Effect.map((rows) => (rows[0]?.by ?? "").startsWith(`${pid} `) && summaryRequests(killedCalls).length > 0),
      Effect.repeat({ until: (held) => held, schedule: Schedule.spaced("100 millis") }),
      Effect.timeout("60 seconds"),
      Effect.catchTag("TimeoutError", () => Effect.die(new Error(`runner ${pid} did not come to compact ${id} within 60 s`)))
    )
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })), Effect.orDie)

/** Sends until answered (200), with the same key, through `runner`: a 503 while the shard moves is sent again. */
const answered = async (runner: Runner, id: string, text: string) => {
  for (let attempt = 0; attempt < 5; attempt++) {
    const answer = await post(runner.httpPort, id, text, `${id}-${text}`)
    if (answer.status === 200) return answer
  }
  throw new Error(`${text} to ${id} was not answered\n${runner.output().slice(-3000)}`)
}

describe("planckclaw serve --cluster: a runner killed mid-compaction", () => {
  it("leaves no lease behind: the agent's next runner compacts it at its first turn there", async () => {
    const [dying, living] = [killed!, survivor!]
    const id = Array.from({ length: 200 }, (_, n) => `lease-${n}`)
      .find((candidate) => placement([dying.runnerPort, living.runnerPort], [candidate])[0] === dying.runnerPort)!
    // Three exchanges (6 lines, over HISTORY_MAX=4): the dying runner's compaction starts and its brain hangs.
    for (const text of ["m1", "m2", "m3"]) expect((await answered(dying, id, text)).body["reply"]).toBe(`reply to ${text}`)
    await Effect.runPromise(compactingOn(id, dying.process.pid!))
    await dying.kill("SIGKILL")

    // The next turn, through the survivor, once the cluster has moved the agent there.
    expect((await answered(living, id, "m4")).body["reply"]).toBe("reply to m4")
    // Asked now: not refused as `busy` by the dead runner's lease.
    const compacted = await compact(living.httpPort, id)
    expect(compacted.status === 200 ? 200 : compacted).toBe(200)
    expect(summaryRequests(survivorCalls).length).toBeGreaterThanOrEqual(1)
    expect((await histories(url)).get(id)).toEqual([
      { role: "user", content: "m4" },
      { role: "assistant", content: "reply to m4" }
    ])
    const rows = await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return yield* sql<{ summary: string | null; by: string | null }>`SELECT summary, compacting_by AS by
        FROM planckclaw_agents WHERE agent_id = ${id}`
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) }))))
    expect(rows[0]?.summary).toMatch(/^reply to EXISTING SUMMARY:/)
    expect(rows[0]?.by).toBeNull()
  }, 120_000)
})
