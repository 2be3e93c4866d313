/**
 * `serve --cluster` serves an agent's history pages, usage, soul and
 * summary (GET /v1/agents/{id}/history, /usage, /memory and GET /v1/usage)
 * from PostgreSQL as `serve` serves them from its files: the same exchanges
 * against both hosts (BothHosts) get the same JSON, refusals included, but
 * for the opaque cursor of a history page. With the database stopped, the
 * cluster answers 503 saying the database did not answer, never its URL.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { usePostgres } from "../../support/Postgres.js"
import { call, HOST_SOUL, onBoth, useBothHosts } from "./BothHosts.js"

const postgres = usePostgres({ database: "cluster_records" })
const both = useBothHosts(postgres)

const send = async (base: string, id: string, text: string) => {
  const sent = await call(base, "POST", `/v1/agents/${id}/messages`, { text })
  expect([sent.status, sent.body]).toEqual([200, { reply: `echo ${text}`, stored: true }])
}

/** Refusals of bad queries and ids, through either address: the same status and body from both hosts. */
const refusals = (base: string, targets: ReadonlyArray<string>) => Promise.all(targets.map((target) => call(base, "GET", target)))

describe("serve --cluster's records over HTTP, as serve's", () => {
  it("pages an agent's history newest first, a page's rows at a time, until its first entry", async () => {
    const [serve, cluster] = await onBoth(both.hosts, async (host) => {
      for (let n = 0; n < 7; n++) await send(host.bases[0], "carol", `message ${n}`)
      const pages: Array<{ readonly entries: Array<{ role: string; content: string }>; readonly last: boolean }> = []
      const seen: Array<number> = []
      let before: number | null | undefined
      do {
        // Each page through the other address than the one before.
        const page = await call(host.bases[pages.length % 2 === 0 ? 0 : 1], "GET", `/v1/agents/carol/history?limit=4${before === undefined ? "" : `&before=${before}`}`)
        expect(page.status, JSON.stringify(page.body)).toBe(200)
        const ats = page.body.entries.map((entry: { at: number }) => entry.at)
        seen.push(...ats)
        // `next` is the oldest `at` of the page, while older entries remain.
        expect(page.body.next === null || page.body.next === ats[ats.length - 1]).toBe(true)
        pages.push({ entries: page.body.entries.map(({ role, content }: any) => ({ role, content })), last: page.body.next === null })
        before = page.body.next
      } while (before !== null && pages.length < 10)
      // Positions only go down: each is older than the one before it.
      expect(seen.every((at, index) => Number.isInteger(at) && (index === 0 || at < seen[index - 1]!))).toBe(true)
      const newest = await call(host.bases[1], "GET", "/v1/agents/carol/history?limit=3")
      // A `before` past the end reads from the end; 0 reads nothing.
      const pastEnd = await call(host.bases[1], "GET", "/v1/agents/carol/history?limit=3&before=999999999999999")
      expect(pastEnd.body).toEqual(newest.body)
      const none = await call(host.bases[0], "GET", "/v1/agents/carol/history?before=0")
      const all = await call(host.bases[0], "GET", "/v1/agents/carol/history?limit=200")
      return {
        pages,
        none: none.body,
        whole: [all.status, all.body.entries.length, all.body.next],
        refused: await refusals(host.bases[1], [
          "/v1/agents/carol/history?limit=0",
          "/v1/agents/carol/history?limit=201",
          "/v1/agents/carol/history?before=-1",
          "/v1/agents/carol/history?before=abc",
          "/v1/agents/carol/history?page=2",
          "/v1/agents/nobody/history",
          "/v1/agents/Not%20An%20Id/history"
        ])
      }
    })
    expect(cluster).toEqual(serve)
    const said = Array.from({ length: 7 }, (_, n) => [{ role: "user", content: `message ${n}` }, { role: "assistant", content: `echo message ${n}` }]).flat()
    expect(serve.pages.map((page) => page.entries.length)).toEqual([4, 4, 4, 2])
    expect(serve.pages.map((page) => page.last)).toEqual([false, false, false, true])
    expect(serve.pages.flatMap((page) => page.entries)).toEqual(said.reverse())
    expect(serve.none).toEqual({ entries: [], next: null })
    expect(serve.whole).toEqual([200, 14, null])
    expect(serve.refused.map((answer) => [answer.status, answer.body.error])).toEqual([
      [400, "bad-query"],
      [400, "bad-query"],
      [400, "bad-query"],
      [400, "bad-query"],
      [400, "bad-query"],
      [404, "not-found"],
      [400, "bad-id"]
    ])
    expect(serve.refused[2]!.body.message).toContain("before must be the `next` of a page")
  }, 120_000)

  it("sums an agent's usage and every agent's per day, priced as serve prices them; refuses bad periods alike", async () => {
    const today = new Date().toISOString().slice(0, 10)
    const [serve, cluster] = await onBoth(both.hosts, async (host) => {
      for (const [id, text] of [["alice", "hi"], ["alice", "how are you"], ["bob", "hello there"]] as const) await send(host.bases[0], id, text)
      const get = (target: string) => call(host.bases[1], "GET", target)
      return {
        alice: await get(`/v1/agents/alice/usage?since=${today}`),
        aliceUntil: await get(`/v1/agents/alice/usage?until=${today}`),
        aliceBefore: await get("/v1/agents/alice/usage?until=2000-01-01"),
        all: await get(`/v1/usage?since=${today}&until=${today}`),
        allOpen: await get("/v1/usage"),
        none: await get("/v1/usage?until=2000-01-01"),
        later: await get("/v1/usage?since=2999-01-01"),
        refused: await refusals(host.bases[0], [
          "/v1/usage?since=yesterday",
          "/v1/usage?until=2025-02-30",
          "/v1/usage?from=2025-01-01",
          "/v1/agents/alice/usage?since=2025-13-01",
          "/v1/agents/nobody/usage",
          "/v1/agents/Not%20An%20Id/usage"
        ])
      }
    })
    expect(cluster).toEqual(serve)
    expect(serve.alice.status).toBe(200)
    expect(serve.alice.body.rows).toEqual([
      expect.objectContaining({ day: today, model: "claude-haiku-4-5-20251001", requests: 2, input: 213, output: 20, cache_write: 10, cache_read: 14 })
    ])
    expect(serve.alice.body.total.cost).toBeGreaterThan(0)
    expect(serve.alice.body.skipped).toBe(0)
    expect(serve.aliceBefore.body.rows).toEqual([])
    // Carol's seven turns are the first test's.
    expect(serve.all.body.rows.map((row: any) => [row.agent, row.day, row.requests, row.input])).toEqual([
      ["alice", today, 2, 213],
      ["bob", today, 1, 111],
      ["carol", today, 7, 7 * 109]
    ])
    expect(serve.all.body.total).toMatchObject({ requests: 10, input: 324 + 763, output: 100, cache_write: 50, cache_read: 70 })
    expect(serve.allOpen.body.rows).toEqual(serve.all.body.rows)
    expect([serve.none.body.rows, serve.none.body.total.requests, serve.later.body.rows]).toEqual([[], 0, []])
    expect(serve.refused.map((answer) => [answer.status, answer.body.error])).toEqual([
      [400, "bad-query"],
      [400, "bad-query"],
      [400, "bad-query"],
      [400, "bad-query"],
      [404, "not-found"],
      [400, "bad-id"]
    ])
  }, 120_000)

  it("reads an agent's soul (its own, else the host's) and summary, before and after a compaction", async () => {
    const [serve, cluster] = await onBoth(both.hosts, async (host) => {
      for (const text of ["first", "second", "third"]) await send(host.bases[0], "dana", text)
      const memory = () => call(host.bases[1], "GET", "/v1/agents/dana/memory")
      const fresh = await memory()
      const compacted = await call(host.bases[0], "POST", "/v1/agents/dana/compact")
      const summarised = await memory()
      await host.setSoul("dana", "Dana's own soul.\n")
      const own = await memory()
      await host.setSoul("dana", "  \n")
      const blank = await memory()
      return { fresh, compacted: compacted.body.compacted, summarised, own, blank, refused: await refusals(host.bases[0], ["/v1/agents/nobody/memory", "/v1/agents/Not%20An%20Id/memory"]) }
    })
    expect(cluster).toEqual(serve)
    expect(serve.fresh).toEqual({ status: 200, body: { soul: HOST_SOUL, summary: "" } })
    expect(serve.compacted).toBe(true)
    expect(serve.summarised.body.soul).toBe(HOST_SOUL)
    expect(serve.summarised.body.summary).toContain("- user: first")
    expect(serve.own.body).toEqual({ soul: "Dana's own soul.\n", summary: serve.summarised.body.summary })
    expect(serve.blank.body.soul).toBe(HOST_SOUL)
    expect(serve.refused.map((answer) => [answer.status, answer.body.error])).toEqual([[404, "not-found"], [400, "bad-id"]])
  }, 120_000)

  // Last: the database goes away for good.
  it("answers 503 saying the database did not answer and why, without its URL or password, when PostgreSQL is down", async () => {
    const server = await Effect.runPromise(postgres)
    const cluster = both.hosts[1]!
    await Effect.runPromise(server.stop)
    const targets = ["/v1/usage", "/v1/agents/carol/history", "/v1/agents/carol/usage", "/v1/agents/carol/memory", "/v1/agents",
      "/v1/agents/carol", "/v1/agents/carol/schedules"]
    for (const target of targets) {
      const answer = await call(cluster.bases[0], "GET", target)
      expect([answer.status, answer.body.error], target).toEqual([503, "unavailable"])
      expect(answer.body.message, target).toMatch(/the database did not answer|cannot use planckclaw_schedules/)
      // What the driver said (the refused connection), not only that a statement failed.
      expect(answer.body.message, target).toContain("ECONNREFUSED")
      expect(answer.body.message, target).not.toContain(server.password)
      expect(answer.body.message, target).not.toContain("postgres://")
    }
  }, 120_000)
})
