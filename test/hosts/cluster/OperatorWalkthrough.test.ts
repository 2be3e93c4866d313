/**
 * The README's "Past one machine" walk-through, as an operator does it,
 * with the built command: a database and a user of its own made on a
 * PostgreSQL server (here a throwaway one), two runners of
 * `planckclaw serve --cluster` (the Anthropic brain pointed at a loopback
 * stand-in), a few hundred agents addressed over HTTP through either
 * runner, one runner SIGKILLed mid-load, every request answered once, and
 * `planckclaw memory export` of several agents compared with what the
 * HTTP replies said.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import { usePostgres } from "../../support/Postgres.js"
import { onFreeRunnerPort, post, spawnListening } from "./Runners.js"

const server = usePostgres({ database: "postgres_admin" })

/** `planckclaw serve --cluster --http 127.0.0.1:0` as built, on a free runner port; resolves once it says where its HTTP API listens. */
const serve = (env: (runnerPort: number) => NodeJS.ProcessEnv) =>
  Effect.acquireRelease(
    Effect.promise(() => onFreeRunnerPort((runnerPort) => spawnListening([Cli.BIN, "serve", "--cluster", "--http", "127.0.0.1:0"], env(runnerPort)))),
    (runner) => Effect.promise(() => runner.kill("SIGKILL"))
  )

describe("the operator's walk-through of serve --cluster (built command)", () => {
  it.live("two runners, 200 agents through either, one killed mid-load: every message answered once, exports match", () =>
    Effect.gen(function*() {
      const postgres = yield* server
      const home = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-operator-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(home, { recursive: true, force: true })))
      // As the README says: a user and a database of its own (not the superuser).
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE USER planckclaw PASSWORD 'operator-secret'`
        yield* sql`CREATE DATABASE planckclaw OWNER planckclaw`
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(postgres.url), maxConnections: 1 })))
      const url = `postgres://planckclaw:operator-secret@127.0.0.1:${postgres.port}/planckclaw`

      const brain = yield* AnthropicServer.make(AnthropicServer.echo)
      const env = (runnerPort: number) =>
        Cli.baseEnv({
          PLANCKCLAW_HOME: home,
          ANTHROPIC_API_KEY: "test-api-key",
          ANTHROPIC_BASE_URL: brain.url,
          PLANCKCLAW_DATABASE_URL: url,
          PLANCKCLAW_RUNNER_ADDRESS: `127.0.0.1:${runnerPort}`,
          // The README's fast-failover setting, so the test does not wait the default 10 s.
          PLANCKCLAW_CLUSTER_LOCK_EXPIRATION: "6"
        })
      const [a, b] = yield* Effect.all([serve(env), serve(env)], { concurrency: 2 })
      const runners = [a!, b!]

      const agents = 200
      const perAgent = 1
      const replies = new Map<string, string>()
      const alive = new Set(runners)
      let answered = 0
      let killedAt = 0
      const sendOne = async (agent: number, message: number) => {
        const text = `agent ${agent} message ${message}`
        for (let attempt = 0; attempt < 200; attempt++) {
          const living = [...alive]
          // Alternating runners; a killed runner's requests go to the other, with the same Idempotency-Key.
          const runner = living[(agent + message + attempt) % living.length]!
          const answer = await post(runner.httpPort, `op-${agent}`, text, `op-${agent}-${message}`)
          if (answer.status === 200) {
            replies.set(text, String(answer.body["reply"]))
            if (++answered === Math.floor((agents * perAgent) / 3)) {
              killedAt = answered
              alive.delete(runners[1]!)
              runners[1]!.process.kill("SIGKILL")
            }
            return
          }
          if (answer.status !== 0 && answer.status !== 503) throw new Error(`${text}: ${answer.status} ${JSON.stringify(answer.body)}`)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        throw new Error(`${text} was never answered\n${runners.map((r) => r.output().slice(-3000)).join("\n-----\n")}`)
      }
      // 32 agents at a time, each agent's messages in order.
      yield* Effect.promise(() => {
        let next = 0
        const worker = async () => {
          while (next < agents) {
            const agent = next++
            for (let message = 0; message < perAgent; message++) await sendOne(agent, message)
          }
        }
        return Promise.all(Array.from({ length: 32 }, worker))
      })
      expect(killedAt).toBeGreaterThan(0)
      expect(runners[1]!.process.signalCode).toBe("SIGKILL")
      expect(replies.size).toBe(agents * perAgent)
      for (const [text, reply] of replies) expect(reply).toBe(`re: ${text}`)

      // Each turn asked the brain once, bar the turns in flight on the killed runner (at most one per agent).
      const asked = new Map<string, number>()
      for (const request of yield* brain.turns) {
        const text = AnthropicServer.lastUserText(request.body)
        asked.set(text, (asked.get(text) ?? 0) + 1)
      }
      expect([...replies.keys()].every((text) => (asked.get(text) ?? 0) >= 1)).toBe(true)
      expect([...asked.values()].reduce((sum, n) => sum + n - 1, 0)).toBeLessThanOrEqual(agents)

      // The survivor still answers, and memory exported from the database is what the replies said.
      expect((yield* Effect.promise(() => post(a!.httpPort, "op-0", "after", "op-0-after"))).body).toEqual({ reply: "re: after", stored: true })
      for (const agent of [0, 1, 100, 199]) {
        const dir = path.join(home, "exported", `op-${agent}`)
        const exported = yield* Cli.run(["memory", "export", "--agent", `op-${agent}`, dir], { cwd: home, env: env(1) })
        expect(exported.code, exported.stderr).toBe(0)
        const lines = fs.readFileSync(path.join(dir, "history.jsonl"), "utf8").split("\n").filter((line) => line !== "")
          .map((line) => JSON.parse(line) as { role: string; content: string })
          .map((entry) => ({ role: entry.role, content: entry.content }))
        const said = Array.from({ length: perAgent }, (_, message) => `agent ${agent} message ${message}`)
          .flatMap((text) => [{ role: "user", content: text }, { role: "assistant", content: replies.get(text)! }])
        expect(lines).toEqual(agent === 0 ? [...said, { role: "user", content: "after" }, { role: "assistant", content: "re: after" }] : said)
      }
      // The password shows nowhere.
      for (const runner of runners) expect(runner.output()).not.toContain("operator-secret")
    }).pipe(Effect.scoped), 300_000)
})
