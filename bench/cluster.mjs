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
 * - cluster_failover_s: with two runners, after the burst, one runner is
 *   SIGKILLed and 50 of the agents (BENCH_CLUSTER_PROBES; about half of
 *   them lived on the killed runner) are sent a message through the
 *   survivor: the time from the kill until the last of them is answered
 *   (the killed runner's agents wait for their shards to move).
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
import { main, progress } from "./lib/child.mjs"
import { round } from "./lib/stats.mjs"

const AGENTS = Number(process.env.BENCH_CLUSTER_AGENTS ?? 1000)
const SOCKETS = Number(process.env.BENCH_HTTP_SOCKETS ?? 64)
const PROBES = Number(process.env.BENCH_CLUSTER_PROBES ?? 50)
const RUNNER = path.join(import.meta.dirname, "../test/hosts/cluster/runner.mjs")
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
  const proc = child.spawn(process.execPath, [RUNNER], {
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
  return { proc, httpPort, kill: () => proc.kill("SIGKILL") }
}

const post = (agent, port, id, text) =>
  new Promise((resolve, reject) => {
    const request = http.request({ host: "127.0.0.1", port, method: "POST", path: `/v1/agents/${id}/messages`, agent, headers: { "content-type": "application/json" } }, (response) => {
      const chunks = []
      response.on("data", (chunk) => chunks.push(chunk))
      response.on("end", () => response.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${response.statusCode}: ${Buffer.concat(chunks)}`)))
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
  return runners
}

const burst = async (runners, ids, text) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: SOCKETS })
  const started = performance.now()
  await Promise.all(ids.map((id, index) => post(agent, runners[index % runners.length].httpPort, id, text)))
  agent.destroy()
  return performance.now() - started
}

main(async () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-bench-cluster-"))
  const postgres = process.env.BENCH_DATABASE_URL ? givenPostgres(process.env.BENCH_DATABASE_URL) : await throwawayPostgres()
  const all = []
  try {
    const ids = Array.from({ length: AGENTS }, (_, n) => `agent-${n}`)
    progress(`cluster: 1 runner, ${AGENTS} agents, one message each at once`)
    const one = await cluster(postgres, "bench_one", 1, work)
    all.push(...one)
    const oneMs = await burst(one, ids, "Remember this.")
    one.forEach((runner) => runner.kill())

    progress(`cluster: 2 runners, ${AGENTS} agents, one message each at once`)
    const two = await cluster(postgres, "bench_two", 2, work)
    all.push(...two)
    const twoMs = await burst(two, ids, "Remember this.")

    progress(`cluster: one of the two runners SIGKILLed; ${PROBES} agents sent a message through the other`)
    const killedAt = performance.now()
    two[1].kill()
    await burst([two[0]], ids.slice(0, PROBES), "Still there?")
    const failoverMs = performance.now() - killedAt
    return {
      metrics: {
        cluster_agents: AGENTS,
        cluster_turns_per_s_1_runner: Math.round((AGENTS / oneMs) * 1000),
        cluster_turns_per_s_2_runners: Math.round((AGENTS / twoMs) * 1000),
        cluster_failover_s: round(failoverMs / 1000, 2),
        cluster_lock_expiration_s: Number(LOCK_EXPIRATION)
      },
      notes: ["cluster: runners, PostgreSQL and the load share the same 2 cores"]
    }
  } finally {
    all.forEach((runner) => runner.kill())
    await postgres.stop()
    fs.rmSync(work, { recursive: true, force: true })
  }
})
