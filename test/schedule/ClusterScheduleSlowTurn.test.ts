/**
 * A scheduled turn in the cluster that takes longer than an HTTP message
 * may wait for its agent (PLANCKCLAW_CLUSTER_SEND_TIMEOUT): the message is
 * kept and answered all the same, and its reply still reaches the entry's
 * webhook, once (before, the wait gave up at the timeout, logged it, and
 * the reply went nowhere but the database). One runner on loopback against
 * a throwaway PostgreSQL; the model answers after 2.5 s, the timeout is 1 s.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ClusterSchedules from "../../src/hosts/cluster/ClusterSchedules.js"
import * as ScheduleStore from "../../src/schedule/ScheduleStore.js"
import { brainCalls } from "../hosts/cluster/ClusterKit.js"
import { type Runner, startRunner } from "../hosts/cluster/Runners.js"
import { usePostgres } from "../support/Postgres.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"
import { eventually } from "../support/Sandbox.js"

const postgres = usePostgres({ database: "cluster_schedule_slow_turn" })

const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-cluster-slow-turn-"))
const calls = path.join(work, "calls.log")
let runner: Runner | undefined
const receiver = WebhookReceiver.make()
const posted = receiver.posted

beforeAll(async () => {
  await receiver.listen()
  const server = await Effect.runPromise(postgres)
  runner = await startRunner({
    PLANCKCLAW_DATABASE_URL: server.url,
    PLANCKCLAW_DIR: path.join(work, "memory"),
    RUNNER_CALLS: calls,
    RUNNER_BRAIN_MS: "2500",
    PLANCKCLAW_CLUSTER_SEND_TIMEOUT: "1"
  })
}, 90_000)

afterAll(async () => {
  await runner?.kill("SIGKILL")
  receiver.close()
  fs.rmSync(work, { recursive: true, force: true })
})

describe("a scheduled turn of the cluster longer than PLANCKCLAW_CLUSTER_SEND_TIMEOUT", () => {
  it("is answered once, and its reply reaches the webhook", async () => {
    const url = await Effect.runPromise(Effect.map(postgres, (server) => server.url))
    const hook = receiver.hook("/h")
    const entry = await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return yield* ClusterSchedules.sqlStore(sql, "hal").modify(ScheduleStore.adding({
        when: { _tag: "At", at: new Date(Date.now() + 1000).toISOString() },
        text: "the slow digest",
        to: hook
      }, Date.now(), 65_536))
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) }))))
    await Effect.runPromise(eventually("the webhook post", () => posted.length >= 1 ? true : undefined, "30 seconds"))
    expect(posted).toEqual([{ agent: "hal", schedule: entry.id, reply: `reply to [scheduled ${entry.id}] the slow digest` }])
    expect(brainCalls(calls).get(`[scheduled ${entry.id}] the slow digest`)).toBe(1)
    expect(runner!.output()).not.toContain("did not answer within")
  }, 90_000)
})
