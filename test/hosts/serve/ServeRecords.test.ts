/**
 * The built `planckclaw serve` keeps a usage ledger per agent, reports it
 * (GET /v1/agents/{id}/usage, GET /v1/usage, the listing's `today`, and
 * `planckclaw usage --agent`), and pages an agent's history newest first
 * (GET /v1/agents/{id}/history). The brain is an Anthropic stand-in on
 * loopback whose answers report their token counts.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import { postMessage, setup, startServe } from "../../support/ServeKit.js"

/** An answer echoing the message, reporting tokens that grow with its length, so each agent's sums differ. */
const counting: AnthropicServer.Handler = (request) => AnthropicServer.countingEcho(AnthropicServer.lastUserText(request.body))

const getJson = (base: string, target: string) =>
  Effect.tryPromise(() =>
    fetch(`${base}${target}`).then(async (response) => ({ status: response.status, body: (await response.json()) as any }))
  )

const ledgerOf = (agents: string, id: string) =>
  fs.readFileSync(path.join(agents, id, "usage.jsonl"), "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))

describe("serve's usage ledgers and history pages (built command)", () => {
  it.live("each agent keeps its ledger; the routes and `usage --agent` report what it holds", () =>
    Effect.gen(function*() {
      const { agents, box, env } = yield* setup(counting)
      const serve = yield* startServe(box.dir, env)
      for (const [id, text] of [["alice", "hi"], ["alice", "how are you"], ["bob", "hello there"]] as const) {
        expect((yield* postMessage(serve.base, id, text)).status).toBe(200)
      }
      const alice = ledgerOf(agents, "alice")
      expect(alice.map((line) => [line.kind, line.input, line.output, line.cache_write, line.cache_read])).toEqual([
        ["turn", 102, 10, 5, 7],
        ["turn", 111, 10, 5, 7]
      ])
      expect(ledgerOf(agents, "bob").map((line) => line.input)).toEqual([111])
      const today = new Date().toISOString().slice(0, 10)

      const one = yield* getJson(serve.base, `/v1/agents/alice/usage?since=${today}`)
      expect(one.status).toBe(200)
      expect(one.body.rows).toEqual([expect.objectContaining({ day: today, model: "claude-haiku-4-5-20251001", requests: 2, input: 213, output: 20, cache_write: 10, cache_read: 14 })])
      expect(one.body.total.cost).toBeGreaterThan(0)

      const all = yield* getJson(serve.base, `/v1/usage?since=${today}&until=${today}`)
      expect(all.status).toBe(200)
      expect(all.body.rows.map((row: any) => [row.agent, row.day, row.requests, row.input])).toEqual([["alice", today, 2, 213], ["bob", today, 1, 111]])
      expect(all.body.total).toMatchObject({ requests: 3, input: 324, output: 30, cache_write: 15, cache_read: 21 })
      const none = yield* getJson(serve.base, "/v1/usage?until=2000-01-01")
      expect([none.body.rows, none.body.total.requests]).toEqual([[], 0])

      const listed = yield* getJson(serve.base, "/v1/agents?search=ali")
      expect(listed.body.agents.map((agent: any) => [agent.id, agent.today.tokens])).toEqual([["alice", 213 + 20 + 10 + 14]])
      expect(listed.body.agents[0].today.cost).toBeCloseTo(one.body.total.cost, 12)

      const cli = yield* Cli.run(["usage", "--agent", "alice", "--json"], { cwd: box.dir, env })
      expect(cli.code).toBe(0)
      expect(JSON.parse(cli.stdout).total).toEqual(one.body.total)
      const before = yield* Cli.run(["usage", "--agent", "alice", "--until", "2000-01-01", "--json"], { cwd: box.dir, env })
      expect([before.code, JSON.parse(before.stdout).rows]).toEqual([0, []])
      const badUntil = yield* Cli.run(["usage", "--until", "2025-13-01"], { cwd: box.dir, env })
      expect([badUntil.code === 0, badUntil.stderr]).toEqual([false, expect.stringContaining("--until \"2025-13-01\": expected a date as YYYY-MM-DD")])
      const missing = yield* Cli.run(["usage", "--agent", "nobody"], { cwd: box.dir, env })
      expect([missing.code === 0, missing.stderr]).toEqual([false, expect.stringContaining("no agent nobody")])

      for (const [query, message] of [
        ["since=yesterday", "since must be a date as YYYY-MM-DD"],
        ["until=2025-02-30", "until must be a date as YYYY-MM-DD"],
        ["since=2026-02-01&until=2026-01-01", "since 2026-02-01 is after until 2026-01-01"],
        ["from=2025-01-01", "unknown query parameter"]
      ] as const) {
        const refused = yield* getJson(serve.base, `/v1/usage?${query}`)
        expect([refused.status, refused.body.error, refused.body.message]).toEqual([400, "bad-query", expect.stringContaining(message)])
      }
      expect((yield* getJson(serve.base, "/v1/agents/nobody/usage")).status).toBe(404)
    }))

  it.live("pages an agent's history newest first, from the end of the file, until its first line", () =>
    Effect.gen(function*() {
      const { agents, box, env } = yield* setup(AnthropicServer.echo)
      const serve = yield* startServe(box.dir, env)
      for (let n = 0; n < 7; n++) expect((yield* postMessage(serve.base, "carol", `message ${n}`)).status).toBe(200)
      const file = path.join(agents, "carol", "history.jsonl")
      const lines = fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))
      expect(lines).toHaveLength(14)

      const seen: Array<{ role: string; content: string }> = []
      let before: number | null | undefined
      let pages = 0
      do {
        const page = yield* getJson(serve.base, `/v1/agents/carol/history?limit=4${before === undefined ? "" : `&before=${before}`}`)
        expect(page.status).toBe(200)
        expect(page.body.entries.length).toBeLessThanOrEqual(4)
        for (const entry of page.body.entries) {
          // `at` is where the line starts in the file.
          expect(fs.readFileSync(file, "utf8").slice(entry.at).startsWith(JSON.stringify({ role: entry.role, content: entry.content }))).toBe(true)
          seen.push({ role: entry.role, content: entry.content })
        }
        before = page.body.next
        pages++
      } while (before !== null && pages < 10)
      expect(pages).toBe(4)
      expect(seen).toEqual([...lines].reverse())

      for (const [query, message] of [
        ["limit=0", "limit must be an integer from 1 to 200"],
        ["before=-1", "before must be the `next` of a page"],
        ["page=2", "unknown query parameter"]
      ] as const) {
        const refused = yield* getJson(serve.base, `/v1/agents/carol/history?${query}`)
        expect([refused.status, refused.body.message]).toEqual([400, expect.stringContaining(message)])
      }
      // A cursor inside a line (stale, or made by hand) is refused, saying so, rather than answered with a wrong page.
      const second = fs.readFileSync(file, "utf8").indexOf("\n") + 1
      for (const inside of [1, second + 3]) {
        const refused = yield* getJson(serve.base, `/v1/agents/carol/history?before=${inside}`)
        expect([refused.status, refused.body.error, refused.body.message]).toEqual([400, "bad-query", expect.stringContaining("does not point at the start of a line")])
      }
      expect((yield* getJson(serve.base, `/v1/agents/carol/history?before=${second}`)).body.entries).toEqual([{ at: 0, ...lines[0] }])
      expect((yield* getJson(serve.base, "/v1/agents/nobody/history")).status).toBe(404)
    }))
})
