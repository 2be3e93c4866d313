/**
 * Two runner processes on loopback, messages over HTTP, and the PostgreSQL
 * server stopped abruptly mid-load (`pg_ctl stop -m immediate`), then
 * started again on the same port and data: every message accepted is
 * answered exactly once, histories are complete, the runners are still the
 * processes they were (no crash loop), and new messages work after. During
 * the outage a request is either answered later or refused with a 503
 * saying why; never a 500.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { usePostgres } from "../../support/Postgres.js"
import { brainCalls, histories } from "./ClusterKit.js"
import { post, type Runner, startRunner } from "./Runners.js"

const postgres = usePostgres({ database: "cluster_outage" })

const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-cluster-outage-"))
const calls = path.join(work, "calls.log")
let runners: Array<Runner> = []

beforeAll(async () => {
  const server = await Effect.runPromise(postgres)
  const env = { PLANCKCLAW_DATABASE_URL: server.url, PLANCKCLAW_DIR: path.join(work, "memory"), RUNNER_CALLS: calls, RUNNER_BRAIN_MS: "20" }
  runners = await Promise.all([startRunner(env), startRunner(env)])
}, 90_000)

afterAll(async () => {
  await Promise.all(runners.map((runner) => runner.kill("SIGKILL")))
  fs.rmSync(work, { recursive: true, force: true })
})

const until = async (what: string, check: () => boolean, limitMs = 60_000) => {
  const deadline = Date.now() + limitMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${runners.map((r) => r.output().slice(-4000)).join("\n-----\n")}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe("planckclaw serve --cluster through a database outage", () => {
  it("waits for the database and resumes: every accepted message answered once, nothing lost, runners alive", async () => {
    const server = await Effect.runPromise(postgres)
    const [a, b] = runners as [Runner, Runner]
    const pids = runners.map((runner) => runner.process.pid)
    const agents = 20
    const perAgent = 4
    const statuses = new Map<number, number>()
    const refusals: Array<string> = []
    const replies = new Map<string, unknown>()
    let answered = 0

    const sendOne = async (agent: number, message: number) => {
      const text = `a${agent} m${message}`
      const deadline = Date.now() + 100_000
      for (let attempt = 0; Date.now() < deadline; attempt++) {
        const runner = [a, b][(agent + message + attempt) % 2]!
        const answer = await post(runner.httpPort, `agent-${agent}`, text, `o${agent}-m${message}`)
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
        if (answer.status === 200) {
          replies.set(text, answer.body["reply"])
          answered++
          return
        }
        // A connection closed under a request (keep-alive racing the server's idle close): sent again, same key.
        if (answer.status === 0) {
          await new Promise((resolve) => setTimeout(resolve, 200))
          continue
        }
        // Anything else but a 503 is a failure of the test; a 503 must say what is wrong.
        if (answer.status !== 503) {
          throw new Error(`${text}: ${answer.status} ${JSON.stringify(answer.body)}\n${runners.map((r) => r.output().slice(-4000)).join("\n-----\n")}`)
        }
        refusals.push(String(answer.body["message"]))
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
      throw new Error(`${text} was never answered\n${runners.map((r) => r.output().slice(-4000)).join("\n-----\n")}`)
    }

    const load = Promise.all(Array.from({ length: agents }, async (_, agent) => {
      for (let message = 0; message < perAgent; message++) await sendOne(agent, message)
    }))
    // Mid-load: the server goes away abruptly, and stays away until both runners have noticed.
    await until("a quarter of the messages answered", () => answered >= (agents * perAgent) / 4)
    const noticed = runners.map((runner) => runner.output().length)
    await Effect.runPromise(server.stop)
    await until(
      "both runners to notice the outage",
      () => runners.every((runner, i) => /the database is unavailable/.test(runner.output().slice(noticed[i])))
    )
    // Longer than PLANCKCLAW_CLUSTER_LOCK_EXPIRATION (6 s here): heartbeats and shard locks lapse too.
    await new Promise((resolve) => setTimeout(resolve, 8_000))
    await Effect.runPromise(server.start)
    await load

    expect(statuses.get(500)).toBeUndefined()
    // A refusal says why in one line: the database, or the wait for the agent; never the engine's dump.
    for (const refusal of refusals) {
      expect(refusal).toMatch(/the database is unavailable|did not answer within/)
      expect(refusal).not.toMatch(/PersistenceError|\n/)
    }
    // No crash loop: the same runner processes, still running, answer new messages.
    expect(runners.map((runner) => runner.process.pid)).toEqual(pids)
    expect(runners.map((runner) => runner.process.exitCode)).toEqual([null, null])
    expect(await post(a.httpPort, "agent-0", "after", "after-a")).toEqual({ status: 200, body: { reply: "reply to after", stored: true } })
    expect(await post(b.httpPort, "agent-1", "after b", "after-b")).toEqual({ status: 200, body: { reply: "reply to after b", stored: true } })

    // One line per outage in each runner's log, not one per failed poll or operation (OutageLog).
    for (const runner of runners) {
      const log = runner.output()
      expect(log.match(/the database is unavailable/g), log.slice(-3000)).toHaveLength(1)
      expect(log).toContain("the database is back")
      expect(log).not.toContain("Could not read messages from storage")
    }

    const history = await histories(server.url)
    const counts = brainCalls(calls)
    for (let agent = 0; agent < agents; agent++) {
      const expected = Array.from({ length: perAgent }, (_, message) => [
        { role: "user", content: `a${agent} m${message}` },
        { role: "assistant", content: `reply to a${agent} m${message}` }
      ]).flat()
      const got = history.get(`agent-${agent}`)?.slice(0, perAgent * 2)
      expect(got, `history of agent-${agent}`).toEqual(expected)
      for (let message = 0; message < perAgent; message++) {
        const text = `a${agent} m${message}`
        expect(replies.get(text)).toBe(`reply to ${text}`)
        expect(counts.get(text) ?? 0).toBeGreaterThanOrEqual(1)
      }
    }
  }, 180_000)
})
