/**
 * Three runner processes on loopback against a throwaway PostgreSQL: any
 * runner answers for any agent, an Idempotency-Key holds across runners,
 * and when one runner is SIGKILLed mid-load every message is still
 * answered once and every history is complete.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Layer, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { usePostgres } from "../../support/Postgres.js"
import { get, post, type Runner, startRunner } from "./Runners.js"

const postgres = usePostgres({ database: "cluster_failover" })

const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-cluster-"))
const calls = path.join(work, "calls.log")
let runners: Array<Runner> = []

beforeAll(async () => {
  const server = await Effect.runPromise(postgres)
  const env = {
    PLANCKCLAW_DATABASE_URL: server.url,
    PLANCKCLAW_DIR: path.join(work, "memory"),
    RUNNER_CALLS: calls,
    RUNNER_BRAIN_MS: "20"
  }
  // Together: they race to create the tables, and must all come up.
  runners = await Promise.all([startRunner(env), startRunner(env), startRunner(env)])
}, 90_000)

afterAll(async () => {
  await Promise.all(runners.map((runner) => runner.kill("SIGKILL")))
  fs.rmSync(work, { recursive: true, force: true })
})

/** Every agent's history as the database holds it, in order. */
const histories = async (): Promise<Map<string, Array<{ role: string; content: string }>>> => {
  const rows = await Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ agent_id: string; role: string; content: string }>`SELECT agent_id, role, content FROM planckclaw_history
      ORDER BY agent_id, seq`
  }).pipe(Effect.provide(Layer.unwrap(Effect.map(postgres, (server) => PgClient.layer({ url: Redacted.make(server.url) }))))))
  const byAgent = new Map<string, Array<{ role: string; content: string }>>()
  for (const row of rows) {
    const lines = byAgent.get(row.agent_id) ?? []
    lines.push({ role: row.role, content: row.content })
    byAgent.set(row.agent_id, lines)
  }
  return byAgent
}

const brainCalls = (): Map<string, number> => {
  const counts = new Map<string, number>()
  const text = fs.existsSync(calls) ? fs.readFileSync(calls, "utf8") : ""
  for (const line of text.split("\n")) if (line !== "") counts.set(JSON.parse(line), (counts.get(JSON.parse(line)) ?? 0) + 1)
  return counts
}

describe("planckclaw serve --cluster, three runners", () => {
  it("answers for any agent through any runner, and an Idempotency-Key holds across runners", async () => {
    const [a, b, c] = runners as [Runner, Runner, Runner]
    const first = await post(a.httpPort, "solo", "hello", "key-1")
    expect(first).toEqual({ status: 200, body: { reply: "reply to hello", stored: true } })
    // The same key through the two other runners: the same answer, no second turn.
    expect(await post(b.httpPort, "solo", "hello", "key-1")).toEqual(first)
    expect(await post(c.httpPort, "solo", "hello", "key-1")).toEqual(first)
    // The same key with another message: refused, through any runner, not given the first one's reply.
    expect(await post(c.httpPort, "solo", "hello again?", "key-1")).toMatchObject({ status: 422, body: { error: "key-reused" } })
    expect(await post(c.httpPort, "solo", "second", "key-2")).toEqual({ status: 200, body: { reply: "reply to second", stored: true } })
    expect((await histories()).get("solo")).toEqual([
      { role: "user", content: "hello" },
      { role: "assistant", content: "reply to hello" },
      { role: "user", content: "second" },
      { role: "assistant", content: "reply to second" }
    ])
    expect(brainCalls().get("hello")).toBe(1)
    const info = await get(b.httpPort, "/v1/agents/solo")
    expect(info.status).toBe(200)
    expect(info.body["historyLines"]).toBe(4)
    // The listing through a runner, a page at a time, from the database.
    const listed = await get(c.httpPort, "/v1/agents?limit=1")
    expect(listed.status).toBe(200)
    expect(listed.body).toMatchObject({ agents: [{ id: "solo", historyLines: 4 }], next: null })
    expect((await get(a.httpPort, "/v1/agents?limit=0")).status).toBe(400)
    const bad = await post(a.httpPort, "Not%20An%20Id", "hello")
    expect(bad.status).toBe(400)
  }, 30_000)

  it("loses nothing and repeats nothing when a runner is SIGKILLed mid-load", async () => {
    const agents = 50
    const perAgent = 3
    const alive = new Set(runners)
    let answered = 0
    const replies = new Map<string, unknown>()
    const killed = runners[2]!
    const statuses = new Map<number, number>()
    let killedAt = 0
    let lastAnswerAt = 0

    const sendOne = async (agent: number, message: number) => {
      const text = `a${agent} m${message}`
      const deadline = Date.now() + 45_000
      let last: unknown
      for (let attempt = 0; Date.now() < deadline; attempt++) {
        const living = [...alive]
        const runner = living[(agent + message + attempt) % living.length]!
        const answer = await post(runner.httpPort, `agent-${agent}`, text, `a${agent}-m${message}`)
        last = answer
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
        if (answer.status === 200) {
          lastAnswerAt = Date.now()
          replies.set(text, answer.body["reply"])
          if (++answered === Math.floor((agents * perAgent) / 3)) {
            killedAt = Date.now()
            alive.delete(killed)
            void killed.kill("SIGKILL")
          }
          return
        }
        // A killed runner's connection (0) or a 503: the same key again, through another runner.
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      throw new Error(`${text} was never answered (last: ${JSON.stringify(last)})\n${runners.map((r) => r.output().slice(-3000)).join("\n-----\n")}`)
    }

    const started = Date.now()
    await Promise.all(Array.from({ length: agents }, async (_, agent) => {
      for (let message = 0; message < perAgent; message++) await sendOne(agent, message)
    }))
    expect(killed.process.signalCode).toBe("SIGKILL")
    expect(Date.now() - started).toBeLessThan(45_000)
    // Some requests went to the killed runner and were sent again elsewhere; the last answers came after it died.
    expect(statuses.get(200)).toBe(agents * perAgent)
    expect(lastAnswerAt).toBeGreaterThan(killedAt)

    const counts = brainCalls()
    const history = await histories()
    let repeated = 0
    for (let agent = 0; agent < agents; agent++) {
      const expected = Array.from({ length: perAgent }, (_, message) => [
        { role: "user", content: `a${agent} m${message}` },
        { role: "assistant", content: `reply to a${agent} m${message}` }
      ]).flat()
      expect(history.get(`agent-${agent}`)).toEqual(expected)
      for (let message = 0; message < perAgent; message++) {
        const text = `a${agent} m${message}`
        expect(replies.get(text)).toBe(`reply to ${text}`)
        const count = counts.get(text) ?? 0
        expect(count).toBeGreaterThanOrEqual(1)
        repeated += count - 1
      }
    }
    // A turn runs again only when its runner died before its reply was decided: at most the one in flight per agent.
    expect(repeated).toBeLessThanOrEqual(agents)
  }, 60_000)
})
