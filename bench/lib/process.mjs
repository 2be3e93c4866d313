/**
 * `planckclaw run` as a child process: started with its own runtime and
 * memory directories, watched until its six FIFOs are in place, stopped with
 * SIGTERM like a user would.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { benchDir, binPath } from "./work.mjs"
import { fifoNames } from "./fifo.mjs"

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
