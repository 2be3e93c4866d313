/**
 * The far ends of the agent's FIFOs, opened the way the agent opens its own
 * (O_RDWR | O_NONBLOCK wrapped in a net.Socket, so reads go through the
 * event loop and never park a thread-pool thread), with line and block
 * framing and the instant answers the benches use.
 */
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"

export const fifoNames = ["interact_in", "interact_out", "brain_in", "brain_out", "claw_in", "claw_out"]

export const fifoPaths = (runDir) => ({
  interactIn: path.join(runDir, "interact_in"),
  interactOut: path.join(runDir, "interact_out"),
  brainIn: path.join(runDir, "brain_in"),
  brainOut: path.join(runDir, "brain_out"),
  clawIn: path.join(runDir, "claw_in"),
  clawOut: path.join(runDir, "claw_out")
})

/** The environment a bridge process is started with: this one's, and where the six FIFOs of `runDir` are. */
export const bridgeEnvironment = (runDir) => {
  const paths = fifoPaths(runDir)
  return {
    ...process.env,
    PLANCKCLAW_INTERACT_IN: paths.interactIn,
    PLANCKCLAW_INTERACT_OUT: paths.interactOut,
    PLANCKCLAW_BRAIN_IN: paths.brainIn,
    PLANCKCLAW_BRAIN_OUT: paths.brainOut,
    PLANCKCLAW_CLAW_IN: paths.clawIn,
    PLANCKCLAW_CLAW_OUT: paths.clawOut
  }
}

/** One end of a FIFO, used in one direction only. */
export const openFifo = (file, direction) => {
  const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_NONBLOCK)
  if (!fs.fstatSync(fd).isFIFO()) {
    fs.closeSync(fd)
    throw new Error(`${file} is not a named pipe`)
  }
  const socket = new net.Socket({ fd, readable: direction === "read", writable: direction === "write", allowHalfOpen: true })
  socket.on("error", () => undefined)
  return socket
}

/** Calls `onFrame` with each piece of the stream ended by `separator` (without it). */
export const onFrames = (socket, separator, onFrame) => {
  let pending = ""
  socket.setEncoding("utf8")
  socket.on("data", (chunk) => {
    pending += chunk
    let cut
    while ((cut = pending.indexOf(separator)) !== -1) {
      const frame = pending.slice(0, cut)
      pending = pending.slice(cut + separator.length)
      onFrame(frame)
    }
  })
}

// ---------------------------------------------------------------------------
// Instant answers

export const REPLY = "Noted."
export const TOOL_REPLY = "Done with the tool."
/** A user message starting with this asks the instant brain for one tool round. */
export const TOOL_PREFIX = "tool:"

const textAnswer = (text) => JSON.stringify({ content: [{ type: "text", text }], stop_reason: "end_turn" })
const plainAnswer = textAnswer(REPLY)
const toolDone = textAnswer(TOOL_REPLY)
/** The instant brain's summary for a compaction request. */
export const SUMMARY = "The user benchmarks the agent."
const summary = textAnswer(SUMMARY)
// The original compaction instruction's opening words (src/agent/Prompt.ts COMPACTION_SYSTEM).
const compactionSystem = "You are a memory compaction assistant."
let toolUseId = 0

/**
 * The brain that answers at once: text, or for a message starting with
 * `tool:` a get_time tool_use and then text once the tool_result is back,
 * or a summary for a compaction request.
 * It parses each request as a real bridge would.
 */
export const brainAnswer = (frame) => {
  const request = JSON.parse(frame)
  if (typeof request.system === "string" && request.system.startsWith(compactionSystem)) return summary
  const last = request.messages[request.messages.length - 1]
  if (typeof last?.content !== "string") return toolDone
  if (!last.content.startsWith(TOOL_PREFIX)) return plainAnswer
  return JSON.stringify({
    content: [{ type: "tool_use", id: `toolu_bench_${++toolUseId}`, name: "get_time", input: {} }],
    stop_reason: "tool_use"
  })
}

export const instantTool = {
  name: "get_time",
  description: "Get the current time as a Unix timestamp",
  input_schema: { type: "object", properties: {} }
}
const catalog = JSON.stringify([instantTool])

/** The claw bridge that answers at once: one tool, get_time. */
export const clawAnswer = (line) =>
  line === "__list_tools__"
    ? catalog
    : line.startsWith("get_time\t")
    ? `Unix timestamp: ${Math.floor(Date.now() / 1000)}`
    : `Unknown tool: ${line.slice(0, line.indexOf("\t"))}`

/** Serves brain_in/brain_out with `brainAnswer`; returns a closer. */
export const serveBrain = (paths) => {
  const requests = openFifo(paths.brainIn, "read")
  const answers = openFifo(paths.brainOut, "write")
  onFrames(requests, "\n\n", (frame) => {
    if (frame.trim() !== "") answers.write(`${brainAnswer(frame)}\n\n`)
  })
  return () => {
    requests.destroy()
    answers.destroy()
  }
}

/** Serves claw_in/claw_out with `clawAnswer`; returns a closer. */
export const serveClaws = (paths) => {
  const requests = openFifo(paths.clawIn, "read")
  const answers = openFifo(paths.clawOut, "write")
  onFrames(requests, "\n", (line) => {
    if (line !== "") answers.write(`${clawAnswer(line)}\n\n`)
  })
  return () => {
    requests.destroy()
    answers.destroy()
  }
}

/**
 * The user's side of interact_in/interact_out: `ask` writes one message and
 * resolves with the reply line and the time it took (ms), measured in the
 * data callback, as an external interact bridge would see it.
 */
export const interactClient = (paths) => {
  const toAgent = openFifo(paths.interactIn, "write")
  const fromAgent = openFifo(paths.interactOut, "read")
  const waiting = []
  onFrames(fromAgent, "\n", (line) => {
    const arrived = performance.now()
    const next = waiting.shift()
    if (next !== undefined) next.resolve({ text: line.slice(line.indexOf("\t") + 1), ms: arrived - next.sent })
  })
  return {
    ask: (text) =>
      new Promise((resolve) => {
        const entry = { resolve, sent: 0 }
        waiting.push(entry)
        entry.sent = performance.now()
        toAgent.write(`bench\t${text}\n`)
      }),
    close: () => {
      toAgent.destroy()
      fromAgent.destroy()
    }
  }
}
