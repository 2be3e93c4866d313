/**
 * Schedules in the cluster (issue 51): two runner processes on loopback
 * against a throwaway PostgreSQL, the entries in planckclaw_schedules. Each
 * single time fires once across both runners (one turn, one webhook POST),
 * and an entry every second fires once per occurrence, never twice. An
 * entry over the runners' PLANCKCLAW_MAX_MESSAGE_BYTES is warned of when read.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, Layer, Redacted, Schedule } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ClusterSchedules from "../../src/hosts/cluster/ClusterSchedules.js"
import * as ScheduleStore from "../../src/schedule/ScheduleStore.js"
import { histories, brainCalls } from "../hosts/cluster/ClusterKit.js"
import { post, type Runner, startRunner } from "../hosts/cluster/Runners.js"
import { usePostgres } from "../support/Postgres.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"
import { eventually } from "../support/Sandbox.js"
import * as Cli from "../support/Cli.js"
import { baseEnv } from "../support/Cli.js"

const postgres = usePostgres({ database: "cluster_schedules" })

const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-cluster-schedules-"))
const calls = path.join(work, "calls.log")
let runners: Array<Runner> = []
const receiver = WebhookReceiver.make<{ agent: string; schedule: string; reply: string }>()
const posted = receiver.posted

beforeAll(async () => {
  await receiver.listen()
  const server = await Effect.runPromise(postgres)
  // The runners' own limit, lower than the CLI's (the default): the database does not hold it.
  const env = { PLANCKCLAW_DATABASE_URL: server.url, PLANCKCLAW_DIR: path.join(work, "memory"), RUNNER_CALLS: calls, PLANCKCLAW_MAX_MESSAGE_BYTES: "1000" }
  runners = await Promise.all([startRunner(env), startRunner(env)])
}, 90_000)

afterAll(async () => {
  await Promise.all(runners.map((runner) => runner.kill("SIGKILL")))
  receiver.close()
  fs.rmSync(work, { recursive: true, force: true })
})

const database = () => Layer.unwrap(Effect.map(postgres, (server) => PgClient.layer({ url: Redacted.make(server.url) })))

/** Adds an entry to `agent`'s schedule in the database, as the cluster keeps it. */
const add = (agent: string, draft: ScheduleStore.Draft) =>
  Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* ClusterSchedules.sqlStore(sql, agent).modify(ScheduleStore.adding(draft, Date.now(), 65_536))
  }).pipe(Effect.provide(database())))

const scheduledLines = (lines: ReadonlyArray<{ role: string; content: string }> | undefined, id: string) =>
  (lines ?? []).filter((line) => line.role === "user" && line.content.startsWith(`[scheduled ${id}]`)).length

describe("planckclaw serve --cluster, two runners, with schedules", () => {
  it("fires each occurrence once across the runners, through the agents' entities; webhooks get the replies", async () => {
    const url = await Effect.runPromise(Effect.map(postgres, (server) => server.url))
    const hook = receiver.hook("/h")
    const at = new Date(Date.now() + 1500).toISOString()
    const once = await Promise.all(["ann", "ben", "cat"].map((agent) => add(agent, { when: { _tag: "At", at }, text: `remind ${agent}`, to: hook })))
    const tick = await add("dee", { when: { _tag: "Every", seconds: 1 }, text: "tick", to: "none" })

    // Every single time answered once, its reply POSTed once; then four more ticks, time for any double to show.
    await Effect.runPromise(eventually("three webhook posts", () => posted.length >= 3 ? true : undefined, "30 seconds"))
    const firstTicks = scheduledLines((await histories(url)).get("dee"), tick.id)
    const fired = await Effect.runPromise(Effect.tryPromise(() => histories(url)).pipe(
      Effect.flatMap((all) => scheduledLines(all.get("dee"), tick.id) >= firstTicks + 4 ? Effect.succeed(all) : Effect.fail("not yet")),
      // Polled every 50 ms, for 30 s at most.
      Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 600 })
    ))
    expect(posted.map((post) => post.agent).sort()).toEqual(["ann", "ben", "cat"])
    for (const [index, agent] of ["ann", "ben", "cat"].entries()) {
      expect(posted.find((post) => post.agent === agent)).toEqual({
        agent,
        schedule: once[index]!.id,
        reply: `reply to [scheduled ${once[index]!.id}] remind ${agent}`
      })
      expect(scheduledLines(fired.get(agent), once[index]!.id)).toBe(1)
      expect(brainCalls(calls).get(`[scheduled ${once[index]!.id}] remind ${agent}`)).toBe(1)
    }
    // The ticks: one turn per firing (no turn twice), and no more firings than seconds that passed.
    const ticks = scheduledLines(fired.get("dee"), tick.id)
    expect(brainCalls(calls).get(`[scheduled ${tick.id}] tick`)).toBe(ticks)
    const row = await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return yield* ClusterSchedules.sqlStore(sql, "dee").read
    }).pipe(Effect.provide(database())))
    const seconds = (Date.parse(row[0]!.lastRun!) - Date.parse(row[0]!.created)) / 1000
    expect(ticks).toBeLessThanOrEqual(seconds)
    // The single times are done and gone from the database.
    for (const agent of ["ann", "ben", "cat"]) {
      const left = await Effect.runPromise(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* ClusterSchedules.sqlStore(sql, agent).read
      }).pipe(Effect.provide(database())))
      expect(left).toEqual([])
    }
  }, 90_000)

  it("planckclaw schedule add|list|remove --agent ID --cluster: the entry in the database, fired by the cluster", async () => {
    const url = await Effect.runPromise(Effect.map(postgres, (server) => server.url))
    const hook = receiver.hook("/h")
    const env = baseEnv({ PLANCKCLAW_HOME: work, PLANCKCLAW_DIR: path.join(work, "cli-memory"), PLANCKCLAW_DATABASE_URL: url })
    const schedule = (...args: Array<string>) => Effect.runPromise(Cli.run(["schedule", ...args], { cwd: work, env }))
    const later = await schedule("add", "--agent", "eve", "--cluster", "--at", "+1h", "--to", "none", "later")
    expect(later.stderr).toBe("")
    const laterId = /^added ([0-9a-f]{8}):/.exec(later.stdout)![1]!
    const kept = await schedule("add", "--agent", "eve", "--cluster", "--every", "1h", "--to", "none", "hourly")
    const keptId = /^added ([0-9a-f]{8}):/.exec(kept.stdout)![1]!
    const listed = JSON.parse((await schedule("list", "--agent", "eve", "--cluster", "--json")).stdout) as ReadonlyArray<{ id: string; next: string }>
    expect(listed.map((entry) => entry.id)).toEqual([laterId, keptId])
    expect((await schedule("remove", "--agent", "eve", "--cluster", laterId)).stdout).toContain(`removed ${laterId}`)
    const without = await schedule("list", "--cluster", "--json")
    expect(without.code).toBe(2)
    expect(without.stderr).toContain("--cluster needs --agent ID")
    // A reminder two seconds ahead, fired by the cluster.
    const added = await schedule("add", "--agent", "eve", "--cluster", "--at", "+2s", "--to", hook, "remind eve")
    const id = /^added ([0-9a-f]{8}):/.exec(added.stdout)![1]!
    await Effect.runPromise(eventually("eve's reminder", () => posted.find((post) => post.agent === "eve"), "30 seconds"))
    expect(posted.filter((post) => post.agent === "eve")).toEqual([{ agent: "eve", schedule: id, reply: `reply to [scheduled ${id}] remind eve` }])
    expect(JSON.parse((await schedule("list", "--agent", "eve", "--cluster", "--json")).stdout).map((entry: { id: string }) => entry.id)).toEqual([keptId])
  }, 90_000)

  it("an agent of the cluster sets its own reminder with the tool (in chat, through any runner); the cluster fires it once", async () => {
    const hook = receiver.hook("/h")
    const asked = await post(runners[1]!.httpPort, "fay", `schedule_add ${JSON.stringify({ text: "remind fay", at: "+2s", to: hook })}`)
    expect(asked.status).toBe(200)
    const reply = (asked.body as { reply: string }).reply
    expect(reply).toMatch(/^scheduled: scheduled [0-9a-f]{8}: at /)
    const id = /scheduled ([0-9a-f]{8}):/.exec(reply.slice("scheduled: ".length))![1]!
    await Effect.runPromise(eventually("fay's reminder", () => posted.find((one) => one.agent === "fay"), "30 seconds"))
    expect(posted.filter((one) => one.agent === "fay")).toEqual([{ agent: "fay", schedule: id, reply: `reply to [scheduled ${id}] remind fay` }])
    expect(brainCalls(calls).get(`[scheduled ${id}] remind fay`)).toBe(1)
  }, 90_000)

  it("schedule add --cluster holds a message to the command's own PLANCKCLAW_MAX_MESSAGE_BYTES; the runner firing the schedules warns of one over its own when it reads it", async () => {
    const url = await Effect.runPromise(Effect.map(postgres, (server) => server.url))
    const env = baseEnv({ PLANCKCLAW_HOME: work, PLANCKCLAW_DIR: path.join(work, "cli-memory"), PLANCKCLAW_DATABASE_URL: url })
    const before = runners.map((runner) => runner.output().length)
    // The command's limit is its own (64 KiB by default): it cannot know the runners' 1000 bytes.
    const added = await Effect.runPromise(Cli.run(["schedule", "add", "--agent", "hal", "--cluster", "--every", "1h", "--to", "none", "x".repeat(2000)], { cwd: work, env }))
    expect(added.code).toBe(0)
    const id = /^added ([0-9a-f]{8}):/.exec(added.stdout)![1]!
    const warning = `schedule hal/${id}: the message is 2000 bytes; the agent takes at most 1000 (PLANCKCLAW_MAX_MESSAGE_BYTES), the 21 bytes of its mark ` +
      `"[scheduled ${id}] " included, so it would be refused at every firing: write at most 979 bytes; the other entries fire as usual`
    const said = () => runners.flatMap((runner, index) => runner.output().slice(before[index]).split("\n").filter((line) => line.includes(`hal/${id}`)))
    // Told within a look at the table (2 s), an hour before it would first fire.
    await Effect.runPromise(eventually("the runner's warning", () => said().length > 0 ? true : undefined, "30 seconds"))
    expect(said()).toHaveLength(1)
    expect(said()[0]).toContain(warning)
  }, 90_000)

  // Last: it kills a runner.
  it("when the runner firing the schedules dies, the other takes over: every tick still a turn of its own, none twice", async () => {
    const url = await Effect.runPromise(Effect.map(postgres, (server) => server.url))
    const tick = await add("gus", { when: { _tag: "Every", seconds: 1 }, text: "gus tick", to: "none" })
    const firing = "the cluster's schedules fire on this runner"
    const ticksOf = async () => scheduledLines((await histories(url)).get("gus"), tick.id)
    const waitTicks = (count: number) =>
      Effect.runPromise(Effect.tryPromise(ticksOf).pipe(
        Effect.flatMap((ticks) => ticks >= count ? Effect.succeed(ticks) : Effect.fail("not yet")),
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 800 })
      ))
    await waitTicks(2)
    // The singleton may have moved as the runners came up (its guards held then too): the holder is the one it last started on.
    const stopped = "the cluster's schedules no longer fire on this runner"
    const holds = (output: string) => output.lastIndexOf(firing) > output.lastIndexOf(stopped)
    const holder = runners.find((runner) => holds(runner.output()))!
    const other = runners.find((runner) => runner !== holder)!
    expect(holds(other.output())).toBe(false)
    const before = other.output().length
    await holder.kill("SIGKILL")
    await Effect.runPromise(eventually("the other runner to take the schedules over", () => other.output().slice(before).includes(firing) ? true : undefined, "40 seconds"))
    const atTakeOver = await ticksOf()
    await waitTicks(atTakeOver + 3)
    const ticks = await ticksOf()
    expect(brainCalls(calls).get(`[scheduled ${tick.id}] gus tick`)).toBe(ticks)
    const row = await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return yield* ClusterSchedules.sqlStore(sql, "gus").read
    }).pipe(Effect.provide(database())))
    expect(ticks).toBeLessThanOrEqual((Date.parse(row[0]!.lastRun!) - Date.parse(row[0]!.created)) / 1000)
  }, 90_000)
})
