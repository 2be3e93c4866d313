/**
 * The do-nothing agent: the floor a turn over the six FIFOs cannot go below.
 * It frames and round-trips the same pipes exactly as a plain planckclaw turn
 * does, and does nothing else (no memory on disk, no journal, no lock, no
 * schema, no timeouts, no Effect):
 *
 *   interact_in line -> claw_in `__list_tools__` / claw_out block
 *   -> brain_in request block / brain_out answer block
 *   (-> per tool_use: claw_in `name\tinput` / claw_out block, brain again)
 *   -> interact_out line
 *
 * The brain request has the same shape and about the same size as the
 * agent's: soul.md as the system prompt, the last HISTORY_KEEP (40) history
 * messages kept in memory plus the new one, and the tool catalogue as listed.
 *
 *   node bench/do-nothing.mjs RUN_DIR [BRAIN_COMMAND|none] [CLAW_COMMAND|none]
 *
 * It makes the six FIFOs in RUN_DIR (one `mkfifo` child, as planckclaw does),
 * starts the bridge commands with the same PLANCKCLAW_* variables planckclaw
 * gives its external bridges (`none`: whoever opens the far ends serves
 * them), opens its own ends the way planckclaw does (O_RDWR | O_NONBLOCK in a
 * net.Socket) and answers until SIGTERM.
 */
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { bridgeEnvironment, fifoNames, fifoPaths, onFrames, openFifo } from "./lib/fifo.mjs"

const [runDir, brainCommand = "none", clawCommand = "none"] = process.argv.slice(2)
if (runDir === undefined) {
  console.error("usage: node bench/do-nothing.mjs RUN_DIR [BRAIN_COMMAND|none] [CLAW_COMMAND|none]")
  process.exit(2)
}

const HISTORY_KEEP = 40
const repoDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const soul = fs.readFileSync(path.join(repoDir, "memory", "soul.md"), "utf8")

const paths = fifoPaths(runDir)
fs.mkdirSync(runDir, { recursive: true, mode: 0o700 })
const missing = fifoNames.map((name) => path.join(runDir, name)).filter((file) => !fs.existsSync(file))
if (missing.length > 0) execFileSync("mkfifo", ["-m", "600", ...missing])

const bridgeEnv = bridgeEnvironment(runDir)
const children = [brainCommand, clawCommand]
  .filter((command) => command !== "none")
  .map((command) => spawn(command, [], { env: bridgeEnv, stdio: ["ignore", "ignore", "inherit"] }))

/** One request at a time on a FIFO pair, answers (blocks ending in an empty line) in order. */
const exchange = (requestPath, answerPath) => {
  const requests = openFifo(requestPath, "write")
  const answers = openFifo(answerPath, "read")
  const waiting = []
  onFrames(answers, "\n\n", (block) => waiting.shift()?.(block))
  return (request) =>
    new Promise((resolve) => {
      waiting.push(resolve)
      requests.write(request)
    })
}
const askClaw = exchange(paths.clawIn, paths.clawOut)
const askBrain = exchange(paths.brainIn, paths.brainOut)
const replies = openFifo(paths.interactOut, "write")
const lines = openFifo(paths.interactIn, "read")

const escapes = { "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r" }
const unescapes = { "\\": "\\", n: "\n", t: "\t", r: "\r" }
const history = []

const turn = async (channel, text) => {
  const tools = JSON.parse(await askClaw("__list_tools__\n"))
  const messages = [...history, { role: "user", content: text }]
  const request = () =>
    `${JSON.stringify({ model: "claude-haiku-4-5-20251001", max_tokens: 1024, system: soul, messages, ...(tools.length > 0 ? { tools } : {}) })}\n\n`
  let answer = JSON.parse(await askBrain(request()))
  while (answer.stop_reason === "tool_use") {
    const results = []
    for (const use of answer.content.filter((block) => block.type === "tool_use")) {
      const content = await askClaw(`${use.name}\t${JSON.stringify(use.input ?? {})}\n`)
      results.push({ type: "tool_result", tool_use_id: use.id, content })
    }
    messages.push({ role: "assistant", content: answer.content }, { role: "user", content: results })
    answer = JSON.parse(await askBrain(request()))
  }
  const reply = answer.content.filter((block) => block.type === "text").map((block) => block.text).join("")
  history.push({ role: "user", content: text }, { role: "assistant", content: reply })
  if (history.length > HISTORY_KEEP) history.splice(0, history.length - HISTORY_KEEP)
  replies.write(`${channel}\t${reply.replace(/[\\\n\t\r]/g, (c) => escapes[c])}\n`)
}

// One turn at a time, in arrival order.
let queue = Promise.resolve()
onFrames(lines, "\n", (line) => {
  const tab = line.indexOf("\t")
  if (tab === -1) return
  const channel = line.slice(0, tab)
  const text = line.slice(tab + 1).replace(/\\([\\ntr])/g, (_, c) => unescapes[c])
  queue = queue.then(() => turn(channel, text))
})

// Exits once its bridges have, so its bench removes the run directory with nothing left running in it.
process.on("SIGTERM", () => {
  Promise.all(children.map((child) =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      child.once("exit", resolve)
      child.kill("SIGTERM")
    })
  )).then(() => process.exit(0))
})
