/**
 * Agents driven over their interact pipes from this process, as an external
 * interact bridge would: planckclaw (`run --bridge none`), the do-nothing
 * agent or the original assembly agent, each with its own runtime and memory
 * directories under `work.dir`.
 */
import * as path from "node:path"
import { fifoPaths, interactClient } from "./fifo.mjs"
import { startAgentProcess, startDoNothing, startOriginalAgent } from "./process.mjs"
import { clawsDir, distFile } from "./work.mjs"

/** Waits for an agent process's FIFOs and opens its interact pipes; `stop` ends both. */
const open = async (agent, runDir) => {
  try {
    await agent.fifosReady()
  } catch (error) {
    await agent.stop()
    throw error
  }
  const client = interactClient(fifoPaths(runDir))
  return {
    agent,
    pid: agent.pid,
    client,
    stop: async () => {
      client.close()
      await agent.stop()
    }
  }
}

/**
 * `planckclaw run --bridge none --brain BRAIN --claw CLAW` (the shipped
 * claws' directory as CLAWS_DIR); `dist` runs another build's unbundled
 * `bin.js` instead of bin/planckclaw, `env` adds settings, `node` another
 * Node executable, `nodeArgs` Node options.
 */
export const planckclaw = (work, name, brain, claw, { dist, env = {}, node, nodeArgs = [] } = {}) => {
  const runDir = path.join(work.dir, `${name}-run`)
  return open(
    startAgentProcess({
      args: ["--bridge", "none", "--brain", brain, "--claw", claw],
      runDir,
      memoryDir: path.join(work.dir, `${name}-memory`),
      cwd: work.dir,
      env: { CLAWS_DIR: clawsDir, ...env },
      nodeArgs,
      ...(node === undefined ? {} : { node }),
      ...(dist === undefined ? {} : { script: [distFile(dist, "cli/bin.js"), "run"] })
    }),
    runDir
  )
}

/** The do-nothing agent (bench/do-nothing.mjs) with the same bridges. */
export const doNothing = (work, brain, claw) => {
  const runDir = path.join(work.dir, "nothing-run")
  return open(startDoNothing({ runDir, cwd: work.dir, brain, claw }), runDir)
}

/**
 * The original assembly agent (the built binary at `binary`) with the same
 * bridges, its FIFOs in `work.dir`/original-run (lib/process.mjs). Its
 * blocking opens wait for the interact pipes, so they are opened first.
 */
export const originalAgent = async (work, binary, brain, claw) => {
  const runDir = path.join(work.dir, "original-run")
  const agent = startOriginalAgent({ binary, runDir, memoryDir: path.join(work.dir, "original-memory"), cwd: work.dir, brain, claw })
  const client = interactClient(fifoPaths(runDir))
  const stop = async () => {
    client.close()
    await agent.stop()
  }
  try {
    await agent.opened()
  } catch (error) {
    await stop()
    throw error
  }
  // A reply that cannot come (the agent died, e.g. the unfixed snapshot at its first compaction) fails the run rather than hang it.
  const died = new Promise((_, reject) =>
    agent.child.once("exit", (code, signal) => reject(new Error(`the original agent exited (${code ?? signal}) in the middle of the run`)))
  )
  died.catch(() => undefined)
  const ask = (text) => Promise.race([client.ask(text), died])
  return { agent, pid: agent.pid, client: { ...client, ask }, stop }
}
