/**
 * A dead runner's agents move once its connections to the database close,
 * not when its heartbeat expires (RunnerPresence). Against a throwaway
 * PostgreSQL: the runners the engine reads, filtered by the sessions open
 * for them; then two runner processes with a 600 s lock expiration, one
 * SIGKILLed, and its agents answered through the other well within the send
 * timeout while the engine's own rule (a fresh heartbeat, healthy) still
 * counts the dead runner.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Runner from "effect/cluster/Runner"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Context, Effect, Layer, Redacted } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import * as RunnerPresence from "../../../src/hosts/cluster/RunnerPresence.js"
import { usePostgres } from "../../support/Postgres.js"
import { placement, post, type Runner as RunnerProcess, shardsSpread, startRunner } from "./Runners.js"

const postgres = usePostgres({ database: "runner_presence" })
const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-presence-"))
const started: Array<RunnerProcess> = []

afterAll(async () => {
  await Promise.all(started.map((runner) => runner.kill("SIGKILL")))
  fs.rmSync(work, { recursive: true, force: true })
})

const client = (url: string, applicationName: string) => PgClient.layer({ url: Redacted.make(url), applicationName })

const sqlOf = <E>(layer: Layer.Layer<SqlClient.SqlClient, E>) =>
  Effect.map(Layer.build(layer), (context) => Context.get(context, SqlClient.SqlClient))

const runnerAt = (port: number) =>
  new Runner.Runner({ address: RunnerAddress.make("127.0.0.1", port), groups: ["default"], weight: 1 })

/**
 * Until the sessions of an earlier call have left pg_stat_activity: a closed
 * client's backend exits a moment after its scope, and one still listed
 * would count as a runner's session in the next call.
 */
const noRunnerSessions = (url: string) =>
  Effect.gen(function*() {
    const sql = yield* sqlOf(client(url, "planckclaw test reader"))
    for (let tries = 0; tries < 200; tries++) {
      const rows = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE application_name LIKE 'planckclaw runner %'`
      if (rows[0]!.n === 0) return
      yield* Effect.sleep("25 millis")
    }
  }).pipe(Effect.scoped, Effect.orDie)

/** The ports of the runners `present` over a memory storage holding `registered` (at 1 and 2) reads, with `sessions` open. */
const presentPorts = (url: string, sessions: ReadonlyArray<string>, registered = [runnerAt(1), runnerAt(2)]) =>
  Effect.gen(function*() {
    yield* noRunnerSessions(url)
    const storage = yield* RunnerStorage.makeMemory
    for (const runner of registered) yield* storage.register(runner, true)
    // Each session stays open while the scope does: a connection is taken from each named client.
    for (const name of sessions) {
      const sql = yield* sqlOf(client(url, name))
      yield* sql`SELECT 1`
      yield* sql.reserve
    }
    const reader = yield* sqlOf(client(url, "planckclaw test reader"))
    const runners = yield* RunnerPresence.present(storage, reader).getRunners
    return runners.map(([runner]) => runner.address.port).sort()
  }).pipe(Effect.scoped, Effect.orDie)

describe("RunnerPresence", () => {
  it("names a runner's connections by its address, as PostgreSQL keeps the name", () => {
    expect(RunnerPresence.applicationName({ host: "127.0.0.1", port: 34431 })).toBe("planckclaw runner 127.0.0.1:34431")
    const long = RunnerPresence.applicationName({ host: "runner-".repeat(12), port: 1 })
    expect(long).toHaveLength(63)
  })

  it("counts a runner while a session named for it is open, and every runner when none is", async () => {
    const server = await Effect.runPromise(postgres)
    const one = RunnerPresence.applicationName(runnerAt(1).address)
    const two = RunnerPresence.applicationName(runnerAt(2).address)
    expect(await Effect.runPromise(presentPorts(server.url, [one]))).toEqual([1])
    expect(await Effect.runPromise(presentPorts(server.url, [one, two]))).toEqual([1, 2])
    // No runner's name among the sessions (a pooler that renames them): the heartbeat alone decides.
    expect(await Effect.runPromise(presentPorts(server.url, []))).toEqual([1, 2])
  }, 30_000)

  it("tells apart runners whose addresses PostgreSQL would cut or rewrite in a session's name", async () => {
    const server = await Effect.runPromise(postgres)
    // 63 bytes are kept: the ports of two runners on one long host name would be cut off, and both names be one.
    const long = "ip-10-0-12-34.eu-west-1.compute.internal.example"
    // PostgreSQL keeps printable ASCII only: a name holding anything else is not the name the runner gave.
    const unicode = "rünner.example"
    for (const host of [long, unicode]) {
      const at = (port: number) => new Runner.Runner({ address: RunnerAddress.make(host, port), groups: ["default"], weight: 1 })
      const one = RunnerPresence.applicationName(at(34431).address)
      const two = RunnerPresence.applicationName(at(34432).address)
      expect(await Effect.runPromise(presentPorts(server.url, [one], [at(34431), at(34432)]))).toEqual([34431])
      expect(await Effect.runPromise(presentPorts(server.url, [two], [at(34431), at(34432)]))).toEqual([34432])
    }
  }, 30_000)

  it("moves a SIGKILLed runner's agents long before its heartbeat expires", async () => {
    const server = await Effect.runPromise(postgres)
    const env = {
      PLANCKCLAW_DATABASE_URL: server.url,
      PLANCKCLAW_DIR: path.join(work, "memory"),
      PLANCKCLAW_CLUSTER_LOCK_EXPIRATION: "600"
    }
    const [a, b] = await Promise.all([startRunner(env), startRunner(env)]) as [RunnerProcess, RunnerProcess]
    started.push(a, b)
    await Effect.runPromise(shardsSpread(server.url, 2))
    const agents = Array.from({ length: 12 }, (_, index) => `presence-${index}`)
    const owners = placement([a.runnerPort, b.runnerPort], agents)
    const onB = agents.filter((_, index) => owners[index] === b.runnerPort)
    expect(onB.length).toBeGreaterThan(0)
    for (const agent of onB) {
      expect(await post(a.httpPort, agent, "first", `${agent}-1`)).toEqual({ status: 200, body: { reply: "reply to first", stored: true } })
    }

    await b.kill("SIGKILL")
    // Through the survivor, each of them answers at the first try: a 503 would come after the 20 s send timeout.
    for (const agent of onB) {
      expect(await post(a.httpPort, agent, "second", `${agent}-2`)).toEqual({ status: 200, body: { reply: "reply to second", stored: true } })
    }
    // The engine's own rule still counts the dead runner: a heartbeat younger than the lock expiration, healthy.
    const rows = await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return yield* sql<{ address: string; healthy: boolean }>`SELECT address, healthy FROM cluster_runners
        WHERE last_heartbeat > now() - interval '600 seconds' ORDER BY address`
    }).pipe(Effect.provide(client(server.url, "planckclaw test reader")), Effect.orDie))
    expect(rows).toContainEqual({ address: `127.0.0.1:${b.runnerPort}`, healthy: true })
  }, 120_000)
})
