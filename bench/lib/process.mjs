/**
 * `planckclaw run` as a child process: started with its own runtime and
 * memory directories, watched until its six FIFOs are in place, stopped with
 * SIGTERM like a user would.
 */
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { benchDir, binPath } from "./work.mjs"
import { bridgeEnvironment, fifoNames, fifoPaths } from "./fifo.mjs"

/** The first child of `pid` (Linux). */
export const childOf = (pid) => {
  const listed = `/proc/${pid}/task/${pid}/children`
  const first = Number(fs.readFileSync(listed, "utf8").trim().split(/\s+/)[0])
  if (!Number.isInteger(first) || first <= 0) throw new Error(`no child of pid ${pid}`)
  return first
}

/**
 * The do-nothing agent (bench/do-nothing.mjs) as a child process, with the
 * same bridges and the same readiness and stop as planckclaw.
 */
export const startDoNothing = ({ runDir, cwd, brain = "none", claw = "none", wrapper = [], env = {} }) =>
  startAgentProcess({
    args: [runDir, brain, claw],
    runDir,
    memoryDir: runDir,
    cwd,
    env,
    wrapper,
    script: [path.join(benchDir, "do-nothing.mjs")]
  })

/** Whether process `pid` has `file` open (Linux /proc). */
const holds = (pid, file) => {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === file
      } catch {
        return false
      }
    })
  } catch {
    return false
  }
}

/** Where the original assembly agent opens its six FIFOs (compiled into it). */
export const ORIGINAL_FIFO_DIR = "/tmp/planckclaw"

/**
 * The original assembly agent (frntn/planckclaw, built outside this
 * repository; its path in BENCH_ORIGINAL_AGENT) started as its launcher
 * planckclaw.sh starts it: the six FIFOs made first, the brain and claw
 * bridges started with them, then the binary, with PLANCKCLAW_DIR for its
 * memory and the launcher's empty history.jsonl and summary.md (no soul.md:
 * it then uses its built-in soul, the very default planckclaw uses). Its
 * FIFO paths are compiled in (/tmp/planckclaw/...): that name is made a
 * symbolic link to `runDir` for the run, and refused if it already exists
 * (a running original, or another bench). The bridges get the same
 * PLANCKCLAW_* variables planckclaw gives its external bridges.
 */
export const startOriginalAgent = ({ binary, runDir, memoryDir, cwd, brain, claw }) => {
  fs.accessSync(binary, fs.constants.X_OK)
  fs.mkdirSync(runDir, { recursive: true, mode: 0o700 })
  fs.mkdirSync(memoryDir, { recursive: true })
  for (const file of ["history.jsonl", "summary.md"]) fs.writeFileSync(path.join(memoryDir, file), "")
  execFileSync("mkfifo", ["-m", "600", ...fifoNames.map((name) => path.join(runDir, name))])
  try {
    fs.symlinkSync(runDir, ORIGINAL_FIFO_DIR)
  } catch (error) {
    throw new Error(`cannot link ${ORIGINAL_FIFO_DIR} to the run directory (${error.code}): is an original agent or another bench running? Remove it if it is stale.`)
  }
  const unlink = () => {
    if (fs.lstatSync(ORIGINAL_FIFO_DIR, { throwIfNoEntry: false })?.isSymbolicLink() && fs.readlinkSync(ORIGINAL_FIFO_DIR) === runDir) {
      fs.unlinkSync(ORIGINAL_FIFO_DIR)
    }
  }
  const paths = fifoPaths(runDir)
  const bridgeEnv = bridgeEnvironment(runDir)
  const bridges = [brain, claw].map((command) => spawn(command, [], { cwd, env: bridgeEnv, stdio: ["ignore", "ignore", "inherit"] }))
  const stopBridges = () =>
    Promise.all(
      bridges.map(
        (bridge) =>
          new Promise((resolve) => {
            if (bridge.exitCode !== null || bridge.signalCode !== null) return resolve()
            bridge.once("exit", () => resolve())
            bridge.kill("SIGTERM")
          })
      )
    )
  const agent = startAgentProcess({ args: [], runDir, memoryDir, cwd, node: binary, script: [] })
  const lastOpened = fs.realpathSync(paths.clawIn)
  return {
    ...agent,
    /**
     * Resolves once the binary holds claw_in, the last FIFO it opens before
     * its first read (its opens block until the far ends are open, so the
     * interact pipes must be opened first); rejects if it exits or takes 5 s.
     */
    opened: () =>
      new Promise((resolve, reject) => {
        const started = performance.now()
        const poll = () => {
          if (agent.child.exitCode !== null || agent.child.signalCode !== null) {
            return reject(new Error(`the original agent exited (${agent.child.exitCode ?? agent.child.signalCode}):\n${agent.stderr()}`))
          }
          if (holds(agent.pid, lastOpened)) return resolve(performance.now())
          if (performance.now() - started > 5000) return reject(new Error(`the original agent did not open ${lastOpened} within 5 s`))
          setTimeout(poll, 5)
        }
        poll()
      }),
    stop: async () => {
      const exited = await agent.stop()
      await stopBridges()
      unlink()
      return exited
    }
  }
}

/**
 * Spawns `[WRAPPER] node [NODE_ARGS] bin/planckclaw run ARGS` (or another
 * `script`, e.g. the do-nothing agent) in `cwd` (a scratch
 * directory, so no config.env of the checkout is read). The runtime directory is created
 * here (0700, as the agent would) so it can be watched from the start.
 */
export const startAgentProcess = ({ args, runDir, memoryDir, cwd, env = {}, stdio = "ignore", node = process.execPath, nodeArgs = [], script = [binPath, "run"], wrapper = [] }) => {
  fs.mkdirSync(runDir, { recursive: true, mode: 0o700 })
  fs.mkdirSync(memoryDir, { recursive: true })
  let stderr = ""
  let exited = null
  const spawnedAt = performance.now()
  const argv = [node, ...nodeArgs, ...script, ...args]
  const command = [...wrapper, ...argv]
  const child = spawn(command[0], command.slice(1), {
    cwd,
    env: { ...process.env, PLANCKCLAW_RUN_DIR: runDir, PLANCKCLAW_DIR: memoryDir, ...env },
    stdio: ["ignore", stdio, "pipe"]
  })
  child.stderr.setEncoding("utf8")
  child.stderr.on("data", (chunk) => {
    stderr += chunk
    if (stderr.length > 100_000) stderr = stderr.slice(-50_000)
  })
  child.once("exit", (code, signal) => {
    exited = { code, signal }
  })
  // Set up in the same tick as the spawn: the child cannot have made a FIFO yet.
  const fifosReady = new Promise((resolve, reject) => {
    const ready = () => fifoNames.every((name) => fs.existsSync(path.join(runDir, name)))
    const watcher = fs.watch(runDir, () => {
      if (ready()) finish()
    })
    const onExit = (code, signal) => {
      watcher.close()
      reject(new Error(`planckclaw exited (${code ?? signal}) before its FIFOs were ready:\n${stderr}`))
    }
    const finish = () => {
      const at = performance.now()
      watcher.close()
      child.off("exit", onExit)
      resolve(at)
    }
    child.once("exit", onExit)
    if (ready()) finish()
  })
  fifosReady.catch(() => undefined)
  return {
    child,
    pid: child.pid,
    spawnedAt,
    /** performance.now() when all six FIFOs existed. */
    fifosReady: () => fifosReady,
    stderr: () => stderr,
    /** The node process itself (under a wrapper such as strace, its child). */
    nodePid: () => (wrapper.length === 0 ? child.pid : childOf(child.pid)),
    /** SIGTERM, then SIGKILL after 5 s; resolves once it exited. */
    stop: () =>
      new Promise((resolve) => {
        if (exited !== null) return resolve(exited)
        const kill = setTimeout(() => child.kill("SIGKILL"), 5000)
        child.once("exit", (code, signal) => {
          clearTimeout(kill)
          resolve({ code, signal })
        })
        child.kill("SIGTERM")
      })
  }
}
