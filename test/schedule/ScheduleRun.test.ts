/**
 * `planckclaw run` (the built command) fires its agent's schedule (issue
 * 51): after downtime, entries missed within PLANCKCLAW_SCHEDULE_GRACE fire
 * once at start, each a turn like any other (history, usage ledger), the
 * reply on the run's terminal or POSTed to a webhook receiver on loopback;
 * an entry missed longer ago is skipped and logged, and fires nothing.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import { sandbox } from "../support/Sandbox.js"

const HOUR = 3_600_000

describe("planckclaw run with a schedule", () => {
  it.live("fires what it missed within the grace period once at start, to the terminal and a webhook; skips and logs older misses", () =>
    Effect.gen(function*() {
      const brain = yield* AnthropicServer.make(AnthropicServer.echo)
      const receiver = yield* LoopbackHttp.serve(() => LoopbackHttp.respond(200, "ok"), (raw) => JSON.parse(raw) as unknown)
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: brain.url })
      const memory = box.env.PLANCKCLAW_DIR!
      fs.mkdirSync(memory, { recursive: true })
      const now = Date.now()
      // Hourly entries made an hour and some ago: their run (an hour after creation) was missed while nothing ran.
      const made = (lateMs: number) => new Date(now - HOUR - lateMs).toISOString()
      fs.writeFileSync(path.join(memory, "schedules.json"), JSON.stringify({
        entries: [
          { id: "term1", when: { _tag: "Every", seconds: 3600 }, text: "stand up and stretch", to: "terminal", created: made(5_000) },
          { id: "hook1", when: { _tag: "Every", seconds: 3600 }, text: "check the build", to: `webhook:http://127.0.0.1:${receiver.port}/h`, created: made(60_000) },
          { id: "old1", when: { _tag: "Every", seconds: 3600 }, text: "too late", to: "terminal", created: made(20 * 60_000) }
        ]
      }))
      const run = yield* Cli.start(["run"], { cwd: box.dir, env: box.env })
      const [posted] = yield* receiver.awaitRequests(1)
      expect(posted!.body).toEqual({ agent: "run", schedule: "hook1", reply: "re: [scheduled hook1] check the build" })
      const [line] = yield* run.lines(1)
      expect(line).toBe("[schedule term1] re: [scheduled term1] stand up and stretch")
      // Then the user's own message, answered as ever, and the end of input ends the run.
      yield* run.write("hello\n")
      expect((yield* run.lines(2))[1]).toBe("re: hello")
      yield* run.closeInput
      const done = yield* run.done
      expect(done.code).toBe(0)
      expect(done.stderr).toContain("schedule old1: missed its run at")
      expect(done.stderr).toContain("older than the grace period (600 s, PLANCKCLAW_SCHEDULE_GRACE): skipped")
      // Each scheduled firing a turn like any other: in history (marked in its user line) and in the usage ledger.
      const history = fs.readFileSync(path.join(memory, "history.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l))
      expect(history.filter((entry) => entry.role === "user").map((entry) => entry.content).sort()).toEqual([
        "[scheduled hook1] check the build",
        "[scheduled term1] stand up and stretch",
        "hello"
      ])
      expect(history.every((entry) => Object.keys(entry).join() === "role,content")).toBe(true)
      expect(fs.readFileSync(path.join(memory, "usage.jsonl"), "utf8").trim().split("\n")).toHaveLength(3)
      // Never a burst: each fired once; the next run is an hour on, recorded in the file.
      expect((yield* brain.requests).filter((request) => !AnthropicServer.isCompaction(request))).toHaveLength(3)
      const left = JSON.parse(fs.readFileSync(path.join(memory, "schedules.json"), "utf8")).entries as ReadonlyArray<{ id: string; lastRun: string; created: string }>
      for (const entry of left) expect(Date.parse(entry.lastRun) - Date.parse(entry.created)).toBe(HOUR)
    }))
})
