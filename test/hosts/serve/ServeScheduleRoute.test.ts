/**
 * The built `planckclaw serve` shows an agent's schedule
 * (GET /v1/agents/{id}/schedules): each entry as written with its last and
 * next runs, none for an agent without a schedules.json, a file that does
 * not decode refused with its path and reason, behind the token.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Cron from "effect/Cron"
import * as Result from "effect/Result"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import { postMessage, setup, startServe } from "../../support/ServeKit.js"

const HOUR = 3_600_000

describe("serve's schedules route (built command)", () => {
  it.live("lists an agent's entries with their last and next runs; none without a file; a bad file named with its reason", () =>
    Effect.gen(function*() {
      const token = `test-token-${crypto.randomUUID()}`
      const { agents, box, env } = yield* setup(AnthropicServer.echo, { PLANCKCLAW_HTTP_TOKEN: token })
      const auth = { authorization: `Bearer ${token}` }
      const getJson = (target: string, headers: Record<string, string> = auth) =>
        Effect.tryPromise(() => fetch(`${serve.base}${target}`, { headers }).then(async (response) => ({ status: response.status, body: (await response.json()) as any })))

      // Alice: one entry added by the built command, two written as a file would hold them.
      fs.mkdirSync(path.join(agents, "alice"), { recursive: true, mode: 0o700 })
      const added = yield* Cli.run(["schedule", "add", "--agent", "alice", "--cron", "0 9 * * *", "--tz", "Europe/Paris", "morning digest"], { cwd: box.dir, env })
      expect(added.code, added.stderr).toBe(0)
      const file = path.join(agents, "alice", "schedules.json")
      const written = JSON.parse(fs.readFileSync(file, "utf8")) as { entries: Array<any> }
      expect(written.entries).toHaveLength(1)
      // An hourly check that last ran at its latest occurrence (so no host fires or skips it meanwhile), and a reminder tomorrow.
      const created = Math.floor((Date.now() - 2.5 * HOUR) / 1000) * 1000
      const at = new Date(Math.floor((Date.now() + 24 * HOUR) / 1000) * 1000).toISOString()
      written.entries.push(
        { id: "hourly", when: { _tag: "Every", seconds: 3600 }, text: "check the build", to: "none", created: new Date(created).toISOString(), lastRun: new Date(created + 2 * HOUR).toISOString() },
        { id: "bank", when: { _tag: "At", at }, text: "call the bank", to: "webhook:http://127.0.0.1:9/hook", created: new Date(created).toISOString() }
      )
      fs.writeFileSync(file, JSON.stringify(written))
      // Carol has no schedule; dave's does not decode.
      fs.mkdirSync(path.join(agents, "dave"), { recursive: true, mode: 0o700 })
      const bad = path.join(agents, "dave", "schedules.json")
      fs.writeFileSync(bad, JSON.stringify({ entries: [{ id: "x1", when: { _tag: "Cron", expression: "61 * * * *", zone: "UTC" }, text: "t", to: "none", created: new Date(created).toISOString() }] }))

      const serve = yield* startServe(box.dir, env)
      expect((yield* postMessage(serve.base, "carol", "hi", auth)).status).toBe(200)

      expect((yield* getJson("/v1/agents/alice/schedules", {})).status).toBe(401)
      const listed = yield* getJson("/v1/agents/alice/schedules")
      expect(listed.status).toBe(200)
      const digest = written.entries[0]
      const cronNext = Cron.next(Result.getOrThrow(Cron.parse("0 9 * * *", "Europe/Paris")), new Date(Date.parse(digest.created))).toISOString()
      expect(listed.body.entries).toEqual([
        {
          id: digest.id,
          when: { _tag: "Cron", expression: "0 9 * * *", zone: "Europe/Paris" },
          written: "cron \"0 9 * * *\" (Europe/Paris)",
          text: "morning digest",
          to: "none",
          created: digest.created,
          lastRun: null,
          nextRun: cronNext
        },
        {
          id: "hourly",
          when: { _tag: "Every", seconds: 3600 },
          written: "every 1h",
          text: "check the build",
          to: "none",
          created: new Date(created).toISOString(),
          lastRun: new Date(created + 2 * HOUR).toISOString(),
          nextRun: new Date(created + 3 * HOUR).toISOString()
        },
        {
          id: "bank",
          when: { _tag: "At", at },
          written: `at ${at}`,
          text: "call the bank",
          to: "webhook:http://127.0.0.1:9/hook",
          created: new Date(created).toISOString(),
          lastRun: null,
          nextRun: at
        }
      ])

      const none = yield* getJson("/v1/agents/carol/schedules")
      expect([none.status, none.body]).toEqual([200, { entries: [] }])
      const refused = yield* getJson("/v1/agents/dave/schedules")
      expect([refused.status, refused.body.error]).toEqual([503, "unavailable"])
      expect(refused.body.message).toContain(bad)
      expect(refused.body.message).toContain("bad cron expression \"61 * * * *\"")
      expect((yield* getJson("/v1/agents/nobody/schedules")).status).toBe(404)
      expect((yield* getJson("/v1/agents/Bad..Id/schedules")).status).toBe(400)
    }), 60_000)
})
