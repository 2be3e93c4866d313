/**
 * Where a plain FIFO turn's time goes (not part of `npm run bench`; run it
 * after `npm run build`):
 *
 *   node bench/profile.mjs [TURNS] [--tool] [--claw scripts|instant] [--interval US] [--dist DIR]
 *
 * TURNS defaults to 2000. Runs the unbundled agent (`node dist/cli/bin.js run
 * --bridge none --brain none --claw scripts`, so profile frames name dist/
 * files, one per src/ module) with `--cpu-prof --trace-gc`, the instant
 * brain served from here, TURNS plain turns after 300 untimed ones.
 * `--interval US`: the profiler's sampling interval (V8's default, 1000 µs,
 * unless given; finer sampling resolves smaller costs but adds overhead).
 * `--dist DIR`: another build's dist/ (kept inside this checkout, as for
 * ab-fifo.mjs) instead of this one's (the named costs and the project
 * functions then find nothing: they match files under dist/).
 * `--claw instant`: `--claw none` instead, with the instant claw bridge of
 * lib/fifo.mjs served from here on the claw pipes. `--tool`: each turn is
 * one tool round (get_time) instead of a plain turn. Prints, for the timed window only:
 * self time by function (top 40), self time by file, inclusive time by
 * project (dist/) function, the GC share and the bytes the young generation
 * freed per turn (about what a turn allocates). Then traces three more turns
 * with `strace -f -y` (leaving out epoll waits and the profiler's signals)
 * and prints the trace, so each system call can be tied to its file.
 *
 * Writes bench/.work/profile-<pid>/ and leaves it (the .cpuprofile opens
 * in Chrome DevTools); remove it by hand.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fifoPaths, interactClient, REPLY, serveBrain, serveClaws, TOOL_PREFIX, TOOL_REPLY } from "./lib/fifo.mjs"
import { startAgentProcess } from "./lib/process.mjs"
import { summarise, top } from "./lib/cpu-profile.mjs"
import { round } from "./lib/stats.mjs"
import { benchDir, clawsDir, distDir, distFile } from "./lib/work.mjs"

const flags = process.argv.slice(2)
const clawFlag = flags.indexOf("--claw")
const CLAW = clawFlag === -1 ? "scripts" : flags[clawFlag + 1]
if (CLAW !== "scripts" && CLAW !== "instant") throw new Error(`--claw scripts or --claw instant, not ${CLAW}`)
const TOOL = flags.includes("--tool")
const intervalFlag = flags.indexOf("--interval")
const INTERVAL = intervalFlag === -1 ? undefined : Number(flags[intervalFlag + 1])
const distFlag = flags.indexOf("--dist")
const DIST = distFlag === -1 ? distDir : path.resolve(flags[distFlag + 1])
const positional = flags.filter((flag, i) => !flag.startsWith("--") && (i === 0 || !["--claw", "--interval", "--dist"].includes(flags[i - 1])))
const TURNS = Number(positional[0] ?? 2000)
const WARMUP = 300
const MESSAGE = TOOL ? `${TOOL_PREFIX} what time is it?` : "What should I remember about this run?"
const EXPECTED = TOOL ? TOOL_REPLY : REPLY
const nowUs = () => Number(process.hrtime.bigint() / 1000n)

const dir = path.join(benchDir, ".work", `profile-${process.pid}`)
fs.mkdirSync(dir, { recursive: true })
const runDir = path.join(dir, "run")

const agent = startAgentProcess({
  args: ["--bridge", "none", "--brain", "none", "--claw", CLAW === "instant" ? "none" : "scripts"],
  runDir,
  memoryDir: path.join(dir, "memory"),
  cwd: dir,
  env: { CLAWS_DIR: clawsDir },
  stdio: "pipe",
  nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${dir}`, ...(INTERVAL === undefined ? [] : [`--cpu-prof-interval=${INTERVAL}`]), "--trace-gc"],
  script: [distFile(DIST, "cli/bin.js"), "run"]
})
let gcLog = ""
agent.child.stdout.setEncoding("utf8")
agent.child.stdout.on("data", (chunk) => {
  gcLog += chunk
})

await agent.fifosReady()
const paths = fifoPaths(runDir)
const closeBrain = serveBrain(paths)
const closeClaws = CLAW === "instant" ? serveClaws(paths) : () => undefined
const client = interactClient(paths)
const turn = async () => {
  const reply = await client.ask(MESSAGE)
  if (reply.text !== EXPECTED) throw new Error(`unexpected reply ${reply.text}`)
}
for (let i = 0; i < WARMUP; i++) await turn()
const gcBefore = gcLog.length
const from = nowUs()
const t0 = performance.now()
for (let i = 0; i < TURNS; i++) await turn()
const wallMs = performance.now() - t0
const to = nowUs()
const gcWindow = gcLog.slice(gcBefore)
// The timed window, for comparing two profiles afterwards.
fs.writeFileSync(path.join(dir, "window.json"), JSON.stringify({ from, to, turns: TURNS, claw: CLAW, tool: TOOL }))

// Three turns under strace, attached to every thread of the running agent.
const tracePath = path.join(dir, "strace.txt")
// The profiler's SIGPROF ticks and thread hand-offs are left out.
const hidden = "trace=!epoll_pwait,epoll_wait,rt_sigreturn,rt_sigprocmask,tgkill,getpid,futex,restart_syscall,mprotect,madvise"
const strace = spawn("strace", ["-f", "-y", "-e", hidden, "-e", "signal=none", "-o", tracePath, "-p", String(agent.pid)], {
  stdio: ["ignore", "ignore", "pipe"]
})
let straceErr = ""
strace.stderr.on("data", (chunk) => {
  straceErr += chunk
})
const attached = await new Promise((resolve) => {
  const check = setInterval(() => {
    if (/attached/.test(straceErr)) {
      clearInterval(check)
      resolve(true)
    }
  }, 20)
  strace.once("error", () => {
    clearInterval(check)
    resolve(false)
  })
  strace.once("exit", () => {
    clearInterval(check)
    resolve(false)
  })
})
if (attached) {
  await new Promise((resolve) => setTimeout(resolve, 300))
  for (let i = 0; i < 3; i++) await turn()
  await new Promise((resolve) => setTimeout(resolve, 100))
  strace.kill("SIGINT")
  await new Promise((resolve) => strace.once("exit", resolve))
}

client.close()
closeBrain()
closeClaws()
await agent.stop()
await new Promise((resolve) => setTimeout(resolve, 300))

// ---------------------------------------------------------------------------
// The CPU profile, timed window only

const profileFile = fs.readdirSync(dir).find((name) => name.endsWith(".cpuprofile"))
if (profileFile === undefined) throw new Error(`no .cpuprofile in ${dir}: the agent did not exit cleanly`)
const profile = JSON.parse(fs.readFileSync(path.join(dir, profileFile), "utf8"))
/**
 * Named costs: time of samples with a matching frame anywhere on the stack.
 * A lower bound for Effect code: a fiber's continuation runs from the
 * runtime's loop, not under the function that built it.
 */
const GROUPS = [
  ["FIFO exchange (src/pipes/Exchange.ts)", (f) => f.url.endsWith("dist/pipes/Exchange.js")],
  ["FIFO pipe ends + framing (src/pipes/PipeEnd.ts, src/runtime/Framing.ts)", (f) => /dist\/(pipes\/PipeEnd|runtime\/Framing)\.js$/.test(f.url)],
  ["interact line intake (src/pipes/FifoInteract.ts)", (f) => f.url.endsWith("dist/pipes/FifoInteract.js")],
  ["Schema decode/encode (effect Schema, ParseResult)", (f) => /effect\/dist\/esm\/(Schema|ParseResult|SchemaAST)\.js$/.test(f.url)],
  ["tool catalogue decode (src/pipes/FifoClaws.ts decodeCatalog)", (f) => f.url.endsWith("dist/pipes/FifoClaws.js") && f.functionName === "decodeCatalog"],
  ["claw discovery scan (src/claws/ScriptClaws.ts)", (f) => f.url.endsWith("dist/claws/ScriptClaws.js")],
  ["brain exchange (src/pipes/FifoBrain.ts)", (f) => f.url.endsWith("dist/pipes/FifoBrain.js")],
  ["memory lock cycle (src/memory/FileLock.ts tryTakeSync/releaseSync)", (f) => f.url.endsWith("dist/memory/FileLock.js")],
  ["leftover check (src/memory/Layout.ts recover)", (f) => f.url.endsWith("dist/memory/Layout.js") && f.functionName === "recover"],
  ["ledger read+parse+encode+replace (src/memory/Ledger.ts, SafeFile.replace)", (f) => f.url.endsWith("dist/memory/Ledger.js") || (f.url.endsWith("dist/runtime/SafeFile.js") && f.functionName === "replace")],
  ["inbox journal (src/memory/Inbox.ts)", (f) => f.url.endsWith("dist/memory/Inbox.js")],
  ["memory, all (src/memory/*)", (f) => f.url.includes("dist/memory/")],
  ["span (Effect.withSpan, stack capture)", (f) => /withSpan|addSpanStackTrace|makeSpan|NativeSpan|captureStackTrace/.test(f.functionName)],
  ["node:fs sync calls", (f) => f.url === "node:fs"],
  ["garbage collector", (f) => f.functionName === "(garbage collector)"]
]
const { total, self, byFile, inclusiveProject, groups } = summarise(profile, { from, to, groups: GROUPS })

const perTurn = (us) => `${round(us / TURNS, 1)} µs/turn (${round((100 * us) / total, 1)} %)`

// Young-generation bytes freed per turn, from --trace-gc lines "Scavenge A (B) -> C (D) MB".
let freedMb = 0
let scavenges = 0
let marks = 0
for (const line of gcWindow.split("\n")) {
  const match = /(Scavenge|Mark-Compact|Mark-sweep)[^\d]*([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ /.exec(line)
  if (match === null) continue
  if (match[1] === "Scavenge") scavenges++
  else marks++
  freedMb += Number(match[2]) - Number(match[3])
}

const kind = `${TOOL ? "tool-round" : "plain"} FIFO turns, ${CLAW === "instant" ? "instant claw bridge" : "shipped claws"}`
console.log(`# Profile of ${TURNS} ${kind} (after ${WARMUP} untimed), ${new Date().toISOString()}`)
console.log(`wall ${round(wallMs / TURNS, 3)} ms/turn; sampled main-thread CPU in window ${round(total / TURNS, 1)} µs/turn`)
console.log(`GC: ${scavenges} scavenges, ${marks} mark-compacts; ~${round((freedMb * 1024) / TURNS, 1)} KiB freed per turn`)
console.log("\n## Named costs (a sample counts where a matching frame is on its stack)")
for (const [name, us] of groups) console.log(`${perTurn(us)}  ${name}`)
let effectSelf = 0
for (const [file, us] of byFile) if (file.startsWith("effect/")) effectSelf += us
console.log(`${perTurn(effectSelf)}  Effect library, self time (fiber runtime, core, Schema, …)`)
console.log("\n## Self time, top 40 functions")
for (const [key, us] of top(self, 40)) console.log(`${perTurn(us)}  ${key}`)
console.log("\n## Self time by file")
for (const [key, us] of top(byFile, 30)) console.log(`${perTurn(us)}  ${key}`)
console.log("\n## Inclusive time of project (dist/) functions, top 40")
for (const [key, us] of top(inclusiveProject, 40)) console.log(`${perTurn(us)}  ${key}`)
if (attached) {
  console.log(`\n## strace -f -y of three turns (${tracePath})`)
  console.log(fs.readFileSync(tracePath, "utf8").replaceAll(dir, "$WORK"))
} else {
  console.log(`\n(strace could not attach: ${straceErr.trim()})`)
}
console.log(`\nProfile: ${path.join(dir, profileFile)}`)
