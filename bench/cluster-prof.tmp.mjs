/**
 * Agents past one machine (issue 16): runners of `planckclaw serve --cluster`
 * (test/hosts/cluster/runner.mjs: dist/ with an in-process brain that answers at
 * once) as real processes on loopback, against one PostgreSQL.
 *
 * - cluster_turns_per_s_1_runner, cluster_turns_per_s_2_runners: 1,000
 *   agents (BENCH_CLUSTER_AGENTS), one message each at the same moment over
 *   the HTTP API (BENCH_HTTP_SOCKETS keep-alive connections, spread over the
 *   runners), from the burst's start to the last reply; agents are new, so
 *   each is started on its runner by its message.
 * - cluster_scaling_2_over_1: two runners' turns/s over one runner's, from
 *   the same run (the new agents' burst).
 * - cluster_turns_per_s_{1_runner,2_runners}_started and
 *   cluster_scaling_2_over_1_started: then BENCH_CLUSTER_ROUNDS (3) more
 *   bursts to the same agents, now started on their runners (a
 *   conversation), over all those rounds.
 * - cluster_cpu_ms_per_turn_*: CPU time (user + system, from /proc) per
 *   turn of each runner, of the throwaway PostgreSQL (all its processes)
 *   and of this load generator, during those bursts: they share the
 *   machine's cores.
 * - cluster_failover_s: with two runners, after the bursts, one runner is
 *   SIGKILLed and 50 of the agents (BENCH_CLUSTER_PROBES; about half of
 *   them lived on the killed runner) are sent a message through the
 *   survivor: the time from the kill until the last of them is answered
 *   (the killed runner's agents wait for their shards to move). Then the
 *   bench checks that nothing was lost or repeated: every probe answered
 *   200 with its own reply, and every agent's history in the database is
 *   exactly its exchanges, each once, in order; it fails otherwise.
 *
 * PostgreSQL: BENCH_DATABASE_URL (each measurement takes its own database
 * on that server, named from it), else a throwaway server (the machine's
 * binaries, initdb into a temp directory, removed after). Failover timing:
 * PLANCKCLAW_CLUSTER_LOCK_EXPIRATION 6 s, PLANCKCLAW_CLUSTER_POLL 0.5 s.
 *
 * Run: npm run build && node bench/cluster.mjs
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, Redacted } from "effect"
import { main, progress } from "./lib/child.mjs"
import { round } from "./lib/stats.mjs"

const AGENTS = Number(process.env.BENCH_CLUSTER_AGENTS ?? 1000)
const SOCKETS = Number(process.env.BENCH_HTTP_SOCKETS ?? 64)
const PROBES = Number(process.env.BENCH_CLUSTER_PROBES ?? 50)
const ROUNDS = Number(process.env.BENCH_CLUSTER_ROUNDS ?? 3)
const RUNNER = "/tmp/sm/runner-prof.mjs"
const LOCK_EXPIRATION = process.env.BENCH_CLUSTER_LOCK_EXPIRATION ?? "6"

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

const exec = (file, args, options) =>
  new Promise((resolve, reject) =>
    child.execFile(file, args, options, (error, stdout, stderr) => error ? reject(new Error(`${path.basename(file)}: ${error.message}\n${stderr}`)) : resolve(stdout)))

/** A throwaway server: initdb as `postgres` when root (PostgreSQL refuses root), trust on loopback. */
const throwawayPostgres = async () => {
  const root = "/usr/lib/postgresql"
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  const bin = versions.map((version) => path.join(root, version, "bin")).find((dir) => fs.existsSync(path.join(dir, "initdb")))
  if (bin === undefined) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql; set BENCH_DATABASE_URL")
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-bench-pg-"))
  const passwd = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((line) => line.startsWith("postgres:"))?.split(":")
  const runAs = process.getuid() === 0 && passwd !== undefined ? { uid: Number(passwd[2]), gid: Number(passwd[3]) } : {}
  if (runAs.uid !== undefined) fs.chownSync(dir, runAs.uid, runAs.gid)
  const options = { cwd: dir, ...runAs, env: { PATH: process.env.PATH, LC_ALL: "C" } }
  const port = await freePort()
  await exec(path.join(bin, "initdb"), ["-D", path.join(dir, "data"), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"], options)
  await exec(path.join(bin, "pg_ctl"), ["-D", path.join(dir, "data"), "-l", path.join(dir, "server.log"), "-w", "-o",
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c max_connections=200`, "start"], options)
  return {
    // The postmaster's pid: its processes are the server's (CPU read from /proc).
    pid: () => Number(fs.readFileSync(path.join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]),
    urlOf: async (name) => {
      await exec(path.join(bin, "createdb"), ["-h", dir, "-p", String(port), "-U", "postgres", name], options)
      return `postgres://postgres@127.0.0.1:${port}/${name}`
    },
    stop: async () => {
      await exec(path.join(bin, "pg_ctl"), ["-D", path.join(dir, "data"), "-m", "immediate", "-w", "stop"], options).catch(() => undefined)
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

const givenPostgres = (url) => ({
  pid: () => undefined,
  urlOf: async (name) => {
    const admin = new URL(url)
    const { default: pg } = await import("pg")
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(`CREATE DATABASE ${name}`)
    await client.end()
    admin.pathname = `/${name}`
    return admin.toString()
  },
  stop: async () => undefined
})

const startRunner = async (env) => {
  const runnerPort = await freePort()
  const proc = child.spawn(process.execPath, ["--cpu-prof", "--cpu-prof-dir=/tmp/cprof", RUNNER], {
    env: { ...process.env, ...env, PLANCKCLAW_RUNNER_ADDRESS: `127.0.0.1:${runnerPort}` },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  const httpPort = await new Promise((resolve, reject) => {
    const onData = (chunk) => {
      output += chunk
      const match = /HTTP API on [^\s:]+:(\d+)/.exec(output)
      if (match !== null) resolve(Number(match[1]))
    }
    proc.stdout.on("data", onData)
    proc.stderr.on("data", onData)
    proc.once("exit", (code) => reject(new Error(`runner exited with ${code}:\n${output}`)))
  })
  return { proc, httpPort, kill: () => proc.kill("SIGTERM") }
}

/** CPU time (user + system) of a process so far, in ms; 0 once it is gone. */
const cpuMs = (pid) => {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return 0
  }
}

/** A process and its children (PostgreSQL's backends), from /proc. */
const withChildren = (pid) => {
  if (pid === undefined) return []
  const children = fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).filter((name) => {
    try {
      return Number(fs.readFileSync(`/proc/${name}/stat`, "utf8").split(") ")[1].split(" ")[1]) === pid
    } catch {
      return false
    }
  }).map(Number)
  return [pid, ...children]
}

/** CPU used by the runners, the database and this process while `work` runs, in ms. */
const measured = async (runners, postgres, work) => {
  const serverBefore = new Map(withChildren(postgres.pid()).map((pid) => [pid, cpuMs(pid)]))
  const runnersBefore = runners.map((runner) => cpuMs(runner.proc.pid))
  const selfBefore = process.cpuUsage()
  const result = await work()
  const self = process.cpuUsage(selfBefore)
  // Backends that ended meanwhile are not counted; the bench's connections stay open.
  const server = withChildren(postgres.pid()).reduce((sum, pid) => sum + cpuMs(pid) - (serverBefore.get(pid) ?? 0), 0)
  return {
    result,
    runners: runners.map((runner, index) => cpuMs(runner.proc.pid) - runnersBefore[index]),
    postgres: postgres.pid() === undefined ? undefined : server,
    load: (self.user + self.system) / 1000
  }
}

const post = (agent, port, id, text) =>
  new Promise((resolve, reject) => {
    const request = http.request({ host: "127.0.0.1", port, method: "POST", path: `/v1/agents/${id}/messages`, agent, headers: { "content-type": "application/json" } }, (response) => {
      const chunks = []
      response.on("data", (chunk) => chunks.push(chunk))
      response.on("end", () => response.statusCode === 200 ? resolve(JSON.parse(Buffer.concat(chunks).toString())) : reject(new Error(`HTTP ${response.statusCode}: ${Buffer.concat(chunks)}`)))
    })
    request.on("error", reject)
    request.end(JSON.stringify({ text }))
  })

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Starts `count` runners on a fresh database and agents directory; one first, so they do not race to create tables. */
const cluster = async (postgres, name, count, work) => {
  const env = {
    PLANCKCLAW_DATABASE_URL: await postgres.urlOf(name),
    PLANCKCLAW_AGENTS_DIR: path.join(work, name),
    PLANCKCLAW_DIR: path.join(work, "memory"),
    PLANCKCLAW_CLUSTER_LOCK_EXPIRATION: LOCK_EXPIRATION,
    PLANCKCLAW_CLUSTER_POLL: "0.5",
    PLANCKCLAW_CLUSTER_SHARDS: "300",
    PLANCKCLAW_CLUSTER_SEND_TIMEOUT: "120",
    PLANCKCLAW_MAX_CONCURRENT_TURNS: "1000"
  }
  const runners = [await startRunner(env)]
  for (let n = 1; n < count; n++) runners.push(await startRunner(env))
  // Let every runner see the others and take its shards.
  await sleep(Number(LOCK_EXPIRATION) * 1000)
  return { runners, url: env.PLANCKCLAW_DATABASE_URL }
}

/** One message to each of `ids` at once, spread over the runners; the replies, and the time to the last. */
const burst = async (runners, ids, text) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: SOCKETS })
  const started = performance.now()
  const replies = await Promise.all(ids.map((id, index) => post(agent, runners[index % runners.length].httpPort, id, text)))
  agent.destroy()
  for (const reply of replies) {
    if (reply.reply !== `reply to ${text}`) throw new Error(`a message ${JSON.stringify(text)} was answered ${JSON.stringify(reply)}`)
  }
  return performance.now() - started
}

/** The first burst to new agents, then ROUNDS to the same agents, with the CPU each process used per turn. */
const load = async (postgres, runners, ids) => {
  const fresh = await measured(runners, postgres, () => burst(runners, ids, "Remember this."))
  const started = await measured(runners, postgres, async () => {
    let ms = 0
    for (let round = 1; round <= ROUNDS; round++) ms += await burst(runners, ids, `Round ${round}.`)
    return ms
  })
  const perTurn = (measure, turns) => ({
    runners: measure.runners.map((ms) => round(ms / turns, 2)),
    postgres: measure.postgres === undefined ? undefined : round(measure.postgres / turns, 2),
    load: round(measure.load / turns, 2)
  })
  return {
    newPerS: (ids.length / fresh.result) * 1000,
    startedPerS: ((ids.length * ROUNDS) / started.result) * 1000,
    cpuNew: perTurn(fresh, ids.length),
    cpuStarted: perTurn(started, ids.length * ROUNDS)
  }
}

/** Every agent's history, as the database holds it. */
const histories = (url) =>
  Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql`SELECT agent_id, role, content FROM planckclaw_history ORDER BY agent_id, seq`
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) }))))

/** Nothing lost or repeated: each agent's history is exactly its exchanges, once each, in order. */
const checkHistories = async (url, ids, probed) => {
  const byAgent = new Map()
  for (const row of await histories(url)) {
    const lines = byAgent.get(row.agent_id) ?? []
    lines.push(`${row.role}: ${row.content}`)
    byAgent.set(row.agent_id, lines)
  }
  const texts = ["Remember this.", ...Array.from({ length: ROUNDS }, (_, n) => `Round ${n + 1}.`)]
  for (const id of ids) {
    const said = probed.has(id) ? [...texts, "Still there?"] : texts
    const expected = said.flatMap((text) => [`user: ${text}`, `assistant: reply to ${text}`])
    const found = byAgent.get(id) ?? []
    if (JSON.stringify(found) !== JSON.stringify(expected)) {
      throw new Error(`agent ${id}'s history is not its exchanges once each, in order:\n${found.join("\n")}`)
    }
  }
}

main(async () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-bench-cluster-"))
  const postgres = process.env.BENCH_DATABASE_URL ? givenPostgres(process.env.BENCH_DATABASE_URL) : await throwawayPostgres()
  const all = []
  try {
    const ids = Array.from({ length: AGENTS }, (_, n) => `agent-${n}`)
    progress(`cluster: 1 runner, ${AGENTS} agents, one message each at once, then ${ROUNDS} more rounds`)
    const one = await cluster(postgres, "bench_one", 1, work)
    all.push(...one.runners)
    const oneRunner = await load(postgres, one.runners, ids)
    one.runners.forEach((runner) => runner.kill())

    progress(`cluster: 2 runners, ${AGENTS} agents, one message each at once, then ${ROUNDS} more rounds`)
    const two = await cluster(postgres, "bench_two", 2, work)
    all.push(...two.runners)
    const twoRunners = await load(postgres, two.runners, ids)

    progress(`cluster: one of the two runners SIGKILLed; ${PROBES} agents sent a message through the other`)
    const killedAt = performance.now()
    two.runners[1].kill()
    const probes = ids.slice(0, PROBES)
    // Each probe must be answered (200) with its own reply (burst checks it).
    await burst([two.runners[0]], probes, "Still there?")
    const failoverMs = performance.now() - killedAt
    await checkHistories(two.url, ids, new Set(probes))
    await checkHistories(one.url, ids, new Set())
    // The runners' CPU per turn summed (each runner's in the notes).
    const cpu = (prefix, measure) => ({
      [`${prefix}_runners`]: round(measure.runners.reduce((sum, ms) => sum + ms, 0), 2),
      ...(measure.postgres === undefined ? {} : { [`${prefix}_postgres`]: measure.postgres }),
      [`${prefix}_load`]: measure.load
    })
    return {
      metrics: {
        cluster_agents: AGENTS,
        cluster_turns_per_s_1_runner: Math.round(oneRunner.newPerS),
        cluster_turns_per_s_2_runners: Math.round(twoRunners.newPerS),
        cluster_scaling_2_over_1: round(twoRunners.newPerS / oneRunner.newPerS, 2),
        cluster_turns_per_s_1_runner_started: Math.round(oneRunner.startedPerS),
        cluster_turns_per_s_2_runners_started: Math.round(twoRunners.startedPerS),
        cluster_scaling_2_over_1_started: round(twoRunners.startedPerS / oneRunner.startedPerS, 2),
        ...cpu("cluster_cpu_ms_per_turn_1_runner", oneRunner.cpuNew),
        ...cpu("cluster_cpu_ms_per_turn_2_runners", twoRunners.cpuNew),
        ...cpu("cluster_cpu_ms_per_turn_1_runner_started", oneRunner.cpuStarted),
        ...cpu("cluster_cpu_ms_per_turn_2_runners_started", twoRunners.cpuStarted),
        cluster_failover_s: round(failoverMs / 1000, 2),
        cluster_lock_expiration_s: Number(LOCK_EXPIRATION)
      },
      notes: [
        `cluster: runners, PostgreSQL and the load share the same ${os.availableParallelism()} cores`,
        "cluster: failover checked: every probe answered once with its reply, every history its exchanges once each, in order",
        `cluster: CPU ms per turn of each of the 2 runners: new agents ${twoRunners.cpuNew.runners.join(" + ")}, started ${twoRunners.cpuStarted.runners.join(" + ")}`
      ]
    }
  } finally {
    all.forEach((runner) => runner.kill())
    await postgres.stop()
    fs.rmSync(work, { recursive: true, force: true })
  }
})
