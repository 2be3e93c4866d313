/**
 * Cluster runners as real processes (`node test/hosts/cluster/runner.mjs`, built
 * code from dist/), each with its runner port and HTTP port on loopback,
 * against one PostgreSQL database and one agents directory; an HTTP client
 * for their API; and when the shards have moved between them.
 */
import * as child from "node:child_process"
import * as http from "node:http"
import * as net from "node:net"
import * as path from "node:path"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, HashRing, Redacted, Schedule } from "effect"
import { ENGINE_LOCK_NAMESPACE } from "../../../src/memory/sql/SqlCompactionLocks.js"
import { baseEnv, BIN } from "../../support/Cli.js"

export const RUNNER = path.join(import.meta.dirname, "runner.mjs")

export interface Runner {
  readonly process: child.ChildProcess
  readonly httpPort: number
  readonly runnerPort: number
  readonly output: () => string
  readonly kill: (signal: NodeJS.Signals) => Promise<void>
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

/** A process of `args` (after node) that says on its output where its HTTP API listens. */
export interface Listening {
  readonly process: child.ChildProcess
  readonly httpPort: number
  readonly output: () => string
  readonly kill: (signal: NodeJS.Signals) => Promise<void>
}

/** Spawns `node args...` with `env` and waits, at most 60 s, until it logs "HTTP API on host:port". */
export const spawnListening = async (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv): Promise<Listening> => {
  const proc = child.spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()))
  const httpPort = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`runner did not start within 60 s:\n${output}`)), 60_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      const match = /HTTP API on [^\s:]+:(\d+)/.exec(output)
      if (match !== null) {
        clearTimeout(timer)
        resolve(Number(match[1]))
      }
    }
    proc.stdout!.on("data", onData)
    proc.stderr!.on("data", onData)
    proc.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`runner exited with ${code} before listening:\n${output}`))
    })
  })
  return {
    process: proc,
    httpPort,
    output: () => output,
    kill: (signal) => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal)
      return exited
    }
  }
}

/** Shards the test runners spread agents over (PLANCKCLAW_CLUSTER_SHARDS). */
export const SHARDS = 30

/** What a runner says, exiting, when its runner port cannot be bound (ClusterServe.runnerLayer). */
export const PORT_TAKEN = /cannot listen for peers on/

/**
 * `start` on a free runner port (`choose`'s, any free one by default), tried
 * again on a new one (three tries in all) when the port was taken before the
 * runner bound it, seconds later: the runner says so (PORT_TAKEN), in a
 * rejection or, for a command run to its end, in what `taken` reads from its
 * outcome.
 */
export const onFreeRunnerPort = <A>(
  start: (runnerPort: number) => Promise<A>,
  { choose = freePort, taken = () => false, tries = 3 }: {
    readonly taken?: (outcome: A) => boolean
    readonly choose?: () => Promise<number>
    readonly tries?: number
  } = {}
): Promise<A> => {
  const again = () => onFreeRunnerPort(start, { choose, taken, tries: tries - 1 })
  return choose().then(start).then(
    (outcome) => tries > 1 && taken(outcome) ? again() : outcome,
    (error: Error) => tries > 1 && PORT_TAKEN.test(error.message) ? again() : Promise.reject(error)
  )
}

/** A free port for which `acceptable` holds; a few tries are enough when it holds for most ports. */
export const freePortWhere = async (acceptable: (port: number) => boolean, tries = 50): Promise<number> => {
  for (let attempt = 0; attempt < tries; attempt++) {
    const port = await freePort()
    if (acceptable(port)) return port
  }
  throw new Error(`no acceptable free port in ${tries} tries`)
}

// effect/cluster's hash of an entity id (its internal/hash.ts hashString, which it does not export).
export const entityHash = (id: string): number => {
  let hash = 5381
  for (let index = id.length; index > 0;) hash = (hash * 33) ^ id.charCodeAt(--index)
  return (hash & 0xbfffffff) | ((hash >>> 1) & 0x40000000)
}

/**
 * The runner port each of `agents` is placed on when runners on loopback at
 * `ports` share the SHARDS shards, as effect/cluster places them: an
 * entity's shard from its id (Sharding.getShardId), and the shards over the
 * runners' addresses by effect's HashRing (each of weight 1).
 */
export const placement = (ports: ReadonlyArray<number>, agents: ReadonlyArray<string>): Array<number> => {
  const ring = HashRing.make<RunnerAddress.RunnerAddress>()
  for (const port of ports) HashRing.add(ring, RunnerAddress.make("127.0.0.1", port), { weight: 1 })
  const owners = HashRing.getShards(ring, SHARDS) ?? []
  return agents.map((id) => owners[Math.abs(entityHash(id) % SHARDS)]?.port ?? Number.NaN)
}

/**
 * Starts a runner (`script`, default runner.mjs) on a free runner port and
 * waits until its HTTP API listens; the settings are the test's
 * failover-fast ones.
 */
export const startRunner = (env: Record<string, string>, script = RUNNER, choosePort: () => Promise<number> = freePort): Promise<Runner> =>
  onFreeRunnerPort((runnerPort) =>
    spawnListening([script], baseEnv({
      PLANCKCLAW_RUNNER_ADDRESS: `127.0.0.1:${runnerPort}`,
      PLANCKCLAW_CLUSTER_LOCK_EXPIRATION: "6",
      PLANCKCLAW_CLUSTER_POLL: "0.2",
      PLANCKCLAW_CLUSTER_SHARDS: String(SHARDS),
      PLANCKCLAW_CLUSTER_SEND_TIMEOUT: "20",
      ...env
    })).then((listening) => ({ ...listening, runnerPort })), { choose: choosePort })

/**
 * Waits, at most 30 s, until `runners` runners (a divisor of SHARDS) of the
 * database at `url` hold the shard locks in equal shares, as the engine's
 * ring assigns them (HashRing.getShards caps each runner at its share): the
 * shards have moved to the runner that joined last, and an agent started
 * from then on stays where it starts. The engine holds shard n as the
 * session-level advisory lock (its namespace, 1000000 + n), all of a
 * runner's on one session; pg_locks shows the namespace as an unsigned oid.
 */
export const shardsSpread = (url: string, runners: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const share = SHARDS / runners
    let seen: ReadonlyArray<number> = []
    const held = sql<{ n: bigint }>`SELECT count(*) AS n FROM pg_locks
      WHERE locktype = 'advisory' AND granted AND classid = ${ENGINE_LOCK_NAMESPACE >>> 0} AND objsubid = 2
        AND objid BETWEEN 1000001 AND ${1_000_000 + SHARDS}
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      GROUP BY pid`.pipe(
      Effect.map((rows) => rows.map((row) => Number(row.n)).sort((a, b) => a - b)),
      Effect.tap((counts) => Effect.sync(() => {
        seen = counts
      }))
    )
    yield* held.pipe(
      Effect.repeat({ until: (counts) => counts.length === runners && counts.every((n) => n === share), schedule: Schedule.spaced("100 millis") }),
      Effect.timeout("30 seconds"),
      Effect.catchTag("TimeoutError", () =>
        Effect.die(new Error(`${runners} runners did not come to hold ${share} shard locks each within 30 s; the sessions holding them hold ${JSON.stringify(seen)}`))
      )
    )
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })), Effect.orDie)

export interface Answer {
  readonly status: number
  readonly body: Record<string, unknown>
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

/** POSTs a message; a connection that fails (a killed runner) is an Answer with status 0. */
export const post = (port: number, id: string, text: string, key?: string): Promise<Answer> =>
  new Promise((resolve) => {
    const request = http.request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: `/v1/agents/${id}/messages`,
      agent,
      headers: { "content-type": "application/json", ...(key === undefined ? {} : { "idempotency-key": key }) }
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") }))
      response.on("error", () => resolve({ status: 0, body: {} }))
    })
    request.on("error", () => resolve({ status: 0, body: {} }))
    request.end(JSON.stringify({ text }))
  })

/** Asks the agent to compact now (`POST /v1/agents/{id}/compact`). */
export const compact = (port: number, id: string): Promise<Answer> =>
  new Promise((resolve) => {
    const request = http.request({ host: "127.0.0.1", port, method: "POST", path: `/v1/agents/${id}/compact`, agent }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") }))
      response.on("error", () => resolve({ status: 0, body: {} }))
    })
    request.on("error", () => resolve({ status: 0, body: {} }))
    request.end()
  })

export const get = (port: number, route: string): Promise<Answer> =>
  new Promise((resolve) => {
    http.get({ host: "127.0.0.1", port, path: route, agent }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") }))
    }).on("error", () => resolve({ status: 0, body: {} }))
  })

/** Runners started in a test, killed when it ends. */
export const runnersFor = (env: Record<string, string>, count: number) =>
  Effect.acquireRelease(
    Effect.promise(() => Promise.all(Array.from({ length: count }, () => startRunner(env)))),
    (runners) => Effect.promise(() => Promise.all(runners.map((runner) => runner.kill("SIGKILL"))))
  )

/**
 * A runner of the built command (`serve --cluster`, HTTP on a free port) on
 * `databaseUrl`, with `env` (a sandbox's, naming the brain); SIGKILLed when
 * its scope closes, as a crash: what the failover tests need.
 */
export const builtRunner = (env: (extra: Record<string, string>) => NodeJS.ProcessEnv, databaseUrl: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      onFreeRunnerPort((runnerPort) =>
        spawnListening([BIN, "serve", "--cluster", "--http", "127.0.0.1:0"], env({
          PLANCKCLAW_DATABASE_URL: databaseUrl,
          PLANCKCLAW_RUNNER_ADDRESS: `127.0.0.1:${runnerPort}`,
          PLANCKCLAW_CLUSTER_LOCK_EXPIRATION: "6",
          PLANCKCLAW_CLUSTER_POLL: "0.2",
          PLANCKCLAW_CLUSTER_SHARDS: String(SHARDS)
        })).then((listening) => ({ ...listening, runnerPort })))
    ),
    (started) => Effect.promise(() => started.kill("SIGKILL"))
  )
