/**
 * 5. Cold start and idle memory of the built command, `node bin/planckclaw
 * run`, each run in fresh runtime and memory directories, median of RUNS.
 *
 * - prompt: the default run (terminal bridge, built-in Anthropic brain with
 *   a placeholder key that is never used, shipped claws) on a pseudo-terminal
 *   made by util-linux `script`, from spawn until `planckclaw> ` is printed,
 *   which the terminal does only once the agent can take a message (its
 *   layers built: memory open, inbox recovered, its pipe ends open; see
 *   src/interact/AgentReady.ts). Includes the exec of `script` and `sh`,
 *   about a millisecond each.
 * - fifos: `run --bridge none --brain none --claw none`, from spawn until all
 *   six FIFOs exist (inotify on the runtime directory): the agent is not
 *   ready yet then (the first reply below includes that).
 * - first reply: `run --bridge none --brain none --claw scripts`, a message
 *   written as soon as the FIFOs exist, brain served at once from here; from
 *   spawn until the reply line arrives.
 * - idle RSS: VmRSS of the agent's process 1 s after it became ready.
 * - against node: a bare `node -e 0` runs before each FIFO start and before
 *   each prompt start; each median as a ratio to the median of its own bare
 *   runs (cold_start_fifos_x_node, cold_start_prompt_x_node).
 * - `planckclaw --version` and `--help` against a bare `node -e 0`, spawn to
 *   exit, interleaved (one of each per round, 2 × RUNS rounds), as medians
 *   and as ratios to node. A start that exits 0 but writes on stderr (an
 *   older build on a newer Node may refuse a V8 flag) is timed all the same,
 *   and its first stderr line goes in the notes; a non-zero exit fails.
 *
 * PLANCKCLAW_BENCH_REPO=DIR times another checkout's build (bench/compare.mjs).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { main, progress } from "./lib/child.mjs"
import { fifoPaths, interactClient, REPLY, serveBrain } from "./lib/fifo.mjs"
import { startAgentProcess } from "./lib/process.mjs"
import { median, round } from "./lib/stats.mjs"
import { binPath, clawsDir, hasProc, makeWorkDir, procMemoryMb } from "./lib/work.mjs"

const RUNS = Number(process.env.BENCH_COLD_RUNS ?? 10)
const IDLE_MS = 1000
const PROMPT = "planckclaw> "

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const hasScript = () => {
  const paths = (process.env.PATH ?? "").split(":")
  return paths.some((dir) => dir !== "" && fs.existsSync(path.join(dir, "script")))
}

/** The pid of `parent`'s child (script runs one: the agent, after sh's exec). */
const childOf = (parent) => {
  const listed = `/proc/${parent}/task/${parent}/children`
  if (fs.existsSync(listed)) return Number(fs.readFileSync(listed, "utf8").trim().split(/\s+/)[0])
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
    if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === parent) return Number(entry)
  }
  throw new Error(`no child of pid ${parent}`)
}

const quote = (text) => `'${text.replace(/'/g, `'\\''`)}'`

/** The default `planckclaw run` on a pty: ms until the prompt, then idle RSS. */
const promptRun = async (work, i) => {
  const memoryDir = path.join(work.dir, `prompt-memory-${i}`)
  const runDir = path.join(work.dir, `prompt-run-${i}`)
  const command = `exec ${quote(process.execPath)} ${quote(binPath)} run`
  const spawnedAt = performance.now()
  const child = spawn("script", ["-qfec", command, "/dev/null"], {
    cwd: work.dir,
    env: {
      ...process.env,
      SHELL: "/bin/sh",
      TERM: "dumb",
      PLANCKCLAW_DIR: memoryDir,
      PLANCKCLAW_RUN_DIR: runDir,
      CLAWS_DIR: clawsDir,
      ANTHROPIC_API_KEY: "test-key-not-secret",
      ANTHROPIC_BASE_URL: "http://127.0.0.1:9"
    },
    stdio: ["pipe", "pipe", "pipe"]
  })
  let output = ""
  const prompted = new Promise((resolve, reject) => {
    child.stdout.on("data", (chunk) => {
      output += chunk.toString("utf8")
      if (output.includes(PROMPT)) resolve(performance.now())
    })
    child.once("exit", (code) => reject(new Error(`planckclaw on a pty exited (${code}) before its prompt:\n${output}`)))
  })
  child.stderr.on("data", (chunk) => {
    output += chunk.toString("utf8")
  })
  try {
    const at = await prompted
    await sleep(IDLE_MS)
    const agentPid = childOf(child.pid)
    const memory = hasProc ? procMemoryMb(agentPid) : { rss: Number.NaN }
    const fifos = ["interact_in", "brain_in", "claw_in"].every((name) => fs.existsSync(path.join(runDir, name)))
    if (!fifos) throw new Error("prompt shown but the FIFOs are not in place")
    process.kill(agentPid, "SIGTERM")
    return { ms: at - spawnedAt, rssMb: memory.rss }
  } finally {
    await new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      const kill = setTimeout(() => child.kill("SIGKILL"), 5000)
      child.once("exit", () => {
        clearTimeout(kill)
        resolve()
      })
    })
  }
}

/** `run --bridge none --brain none --claw none`: ms until the six FIFOs exist, then idle RSS. */
const fifoRun = async (work, i) => {
  const agent = startAgentProcess({
    args: ["--bridge", "none", "--brain", "none", "--claw", "none"],
    runDir: path.join(work.dir, `fifo-run-${i}`),
    memoryDir: path.join(work.dir, `fifo-memory-${i}`),
    cwd: work.dir
  })
  try {
    const at = await agent.fifosReady()
    await sleep(IDLE_MS)
    sawStderr("planckclaw run --bridge none", agent.stderr())
    return { ms: at - agent.spawnedAt, rssMb: hasProc ? procMemoryMb(agent.pid).rss : Number.NaN }
  } finally {
    await agent.stop()
  }
}

/** Spawn until the reply to a message written as soon as the FIFOs exist. */
const firstReplyRun = async (work, i) => {
  const runDir = path.join(work.dir, `reply-run-${i}`)
  const agent = startAgentProcess({
    args: ["--bridge", "none", "--brain", "none", "--claw", "scripts"],
    runDir,
    memoryDir: path.join(work.dir, `reply-memory-${i}`),
    cwd: work.dir,
    env: { CLAWS_DIR: clawsDir }
  })
  let closeBrain = () => undefined
  let client
  try {
    await agent.fifosReady()
    const paths = fifoPaths(runDir)
    closeBrain = serveBrain(paths)
    client = interactClient(paths)
    const reply = await client.ask("hello")
    if (reply.text !== REPLY) throw new Error(`unexpected first reply ${reply.text}`)
    return { ms: performance.now() - agent.spawnedAt }
  } catch (error) {
    throw new Error(`${error.message}\nplanckclaw stderr:\n${agent.stderr()}`)
  } finally {
    client?.close()
    closeBrain()
    await agent.stop()
  }
}

/**
 * What a start wrote on stderr while exiting 0 (e.g. a flag this Node
 * refuses): still timed, and said in the notes, first line of each kind.
 */
const stderrSeen = new Map()
const sawStderr = (what, text) => {
  const line = text.trim().split("\n", 1)[0]
  if (line !== "" && !stderrSeen.has(what)) stderrSeen.set(what, line)
}

/** Spawn to exit of `node ARGS`, ms. */
const exitRun = (args) =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr.on("data", (chunk) => {
      stderr += chunk
    })
    child.once("error", reject)
    child.once("exit", (code) => {
      const ms = performance.now() - started
      if (code === 0) sawStderr(`node ${args.map((a) => (a === binPath ? "bin/planckclaw" : a)).join(" ")}`, stderr)
      if (code === 0) resolve(ms)
      else reject(new Error(`node ${args.join(" ")} exited ${code}: ${stderr}`))
    })
  })

/** --version, --help and `node -e 0`, one of each per round. */
const cliAgainstNode = async (rounds) => {
  const kinds = { node: ["-e", "0"], version: [binPath, "--version"], help: [binPath, "--help"] }
  const times = { node: [], version: [], help: [] }
  for (const args of Object.values(kinds)) await exitRun(args) // page cache
  for (let i = 0; i < rounds; i++) {
    for (const [name, args] of Object.entries(kinds)) times[name].push(await exitRun(args))
  }
  const node = median(times.node)
  const version = median(times.version)
  const help = median(times.help)
  progress(`node -e 0 ${round(node, 1)} ms, --version ${round(version, 1)} ms (×${round(version / node, 2)}), --help ${round(help, 1)} ms (×${round(help / node, 2)}) (${rounds} rounds)`)
  return {
    node_bare_ms: round(node, 1),
    version_ms: round(version, 1),
    help_ms: round(help, 1),
    version_x_node: round(version / node, 2),
    help_x_node: round(help / node, 2)
  }
}

const series = async (name, runs, once) => {
  const results = []
  for (let i = 0; i < runs; i++) results.push(await once(i))
  const ms = round(median(results.map((r) => r.ms)), 1)
  const rss = results[0]?.rssMb === undefined ? undefined : round(median(results.map((r) => r.rssMb)), 1)
  progress(`${name}: median ${ms} ms${rss === undefined ? "" : `, idle RSS ${rss} MiB`} (${runs} runs)`)
  return { ms, rss, runs: results.map((r) => ({ ms: round(r.ms, 1), ...(r.rssMb === undefined ? {} : { rssMb: round(r.rssMb, 1) }) })) }
}

/**
 * A series of RUNS starts, each after a bare `node -e 0`, so its figure has a
 * ratio to node from the same moments (the machine's minute moves both).
 */
const besideNode = async (name, what, once) => {
  const bare = []
  const result = await series(name, RUNS, async (i) => {
    bare.push(await exitRun(["-e", "0"]))
    return once(i)
  })
  const bareMs = median(bare)
  const xNode = round(result.ms / bareMs, 2)
  progress(`${what} ${result.ms} ms against node -e 0 ${round(bareMs, 1)} ms, interleaved: ×${xNode}`)
  return { ...result, xNode }
}

main(async () => {
  const work = makeWorkDir("cold-start")
  const notes = []
  try {
    // One untimed start so every series finds the files in the page cache.
    await fifoRun(work, "warm")
    const fifos = await besideNode("ready (FIFOs in place), --bridge none --brain none --claw none", "FIFOs in place", (i) => fifoRun(work, i))
    const reply = await series("first reply, --bridge none, shipped claws", RUNS, (i) => firstReplyRun(work, i))
    let prompt
    if (hasScript()) {
      prompt = await besideNode("ready (prompt shown), default run on a pty", "prompt", (i) => promptRun(work, i))
    } else {
      notes.push("cold start: util-linux `script` not found, so no pseudo-terminal: cold_start_ms and idle_rss_mb are the --bridge none figures (FIFOs in place)")
    }
    const cli = await cliAgainstNode(2 * RUNS)
    for (const [what, line] of stderrSeen) notes.push(`cold start: \`${what}\` wrote on stderr (timed all the same): ${line}`)
    const headline = prompt ?? fifos
    return {
      metrics: {
        cold_start_ms: headline.ms,
        idle_rss_mb: headline.rss,
        cold_start_fifos_ms: fifos.ms,
        cold_start_fifos_x_node: fifos.xNode,
        ...(prompt === undefined ? {} : { cold_start_prompt_x_node: prompt.xNode }),
        idle_rss_mb_bridge_none: fifos.rss,
        cold_start_first_reply_ms: reply.ms,
        ...cli
      },
      notes,
      detail: { prompt, fifos, reply }
    }
  } finally {
    work.remove()
  }
})
