/**
 * Where an in-memory turn's time and allocation go (not part of `npm run
 * bench`; run it after `npm run build`). The set-up of turn-memory's plain
 * agent: the real agent from dist/ over the in-memory Interact, the instant
 * brain, the shipped claws, a real memory directory with shipped settings.
 *
 *   node bench/profile-memory.mjs [TURNS]              profile TURNS turns (default 3000) with --cpu-prof
 *   node bench/profile-memory.mjs --compare A B [N]    no profiler: N runs (default 4) of the dist
 *                                                      directories A and B, alternated, p50 and bytes per turn
 *   … --stub                                           memory, inbox and compactor that do nothing and
 *                                                      three in-memory tools: the agent's own cost
 *
 * A dist directory must lie inside this checkout (so it finds node_modules),
 * e.g. a copy of an older build under bench/.work/. Each run is a fresh node
 * process. Allocation per turn: the growth of V8's used heap over a turn,
 * median over turns with no collection in between.
 */
import { fork } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import * as v8 from "node:v8"
import { label, summarise, top } from "./lib/cpu-profile.mjs"
import { round } from "./lib/stats.mjs"
import { clawsDir, distDir, distFile, makeWorkDir, repoDir } from "./lib/work.mjs"

const MESSAGE = "What should I remember about this run?"
const REPLY = "Noted: the benchmark ran."
const WARMUP = 500
const nowUs = () => Number(process.hrtime.bigint() / 1000n)

// ---------------------------------------------------------------------------
// Child: one agent, WARMUP untimed turns, then TURNS timed ones.

const child = async ({ dist, turns, memoryDir, stub, alloc }) => {
  const load = (file) => import(pathToFileURL(distFile(dist, file)).href)
  const { ConfigProvider, Effect, Layer, Queue, References } = await import("effect")
  const Agent = await load("agent/Agent.js")
  const Intake = await load("agent/Intake.js")
  const MemoryHold = await load("memory/MemoryHold.js")
  const { Brain } = await load("ports/Brain.js")
  const ScriptClaws = await load("claws/ScriptClaws.js")
  const SpawnHelper = await load("runtime/process/SpawnHelper.js")
  const InMemoryInteract = await load("interact/InMemoryInteract.js")
  const Logging = await load("runtime/Logging.js")
  const { COMPACTION_SYSTEM } = await load("agent/Prompt.js")
  const { Memory } = await load("memory/Memory.js")
  const { Inbox } = await load("memory/Inbox.js")
  const { Compactor } = await load("agent/Compactor.js")
  const InMemoryClaws = await load("claws/InMemoryClaws.js")
  const { Option } = await import("effect")

  const text = (reply) => ({ content: [{ type: "text", text: reply }], stop_reason: "end_turn" })
  const answer = text(REPLY)
  const summary = text("The user benchmarks the agent.")
  let maxLine = 0
  const brain = {
    complete: (request) => {
      if (process.env.PROFILE_SHOW_REQUEST && request.system !== COMPACTION_SYSTEM) {
        for (const m of request.messages) maxLine = Math.max(maxLine, JSON.stringify(m).length)
        if (Math.random() < 0.001) console.error("lines", request.messages.length, "longest", maxLine)
      }
      return Effect.succeed(request.system === COMPACTION_SYSTEM ? summary : answer)
    }
  }

  fs.mkdirSync(memoryDir, { recursive: true })
  let history = ""
  for (let i = 0; i < 20; i++) {
    history += `${JSON.stringify({ role: "user", content: `Question ${i}: what should I remember about the benchmark run?` })}\n`
    history += `${JSON.stringify({ role: "assistant", content: `Answer ${i}: that the agent must add microseconds, not milliseconds.` })}\n`
  }
  fs.writeFileSync(path.join(memoryDir, "history.jsonl"), history)

  /** --stub: memory, inbox and compactor that do nothing, the same snapshot every turn: the agent's own cost. */
  const stubMemory = () => {
    const lines = history.trim().split("\n").map((line) => JSON.parse(line))
    const snapshot = { soul: fs.readFileSync(path.join(repoDir, "memory", "soul.md"), "utf8"), summary: "The user benchmarks the agent.", history: lines }
    let id = 0
    const memory = { directory: memoryDir, snapshot: () => Effect.succeed(snapshot), append: () => Effect.void, storageFailing: Effect.succeed(false) }
    const inbox = {
      recovered: [],
      accept: (message) => Effect.sync(() => ({ id: ++id, key: `k${id}`, channel: message.channel, text: message.text, reply: Option.none() })),
      answered: () => Effect.void,
      unstored: () => Effect.succeed(false),
      stored: () => Effect.void,
      backlog: Effect.succeed([]),
      delivered: () => Effect.void,
      closeFiles: Effect.void
    }
    const compactor = {
      compactIfNeeded: Effect.succeed(Option.none()),
      compactNow: Effect.succeed(Option.none()),
      startIfNeeded: Effect.void,
      settled: Effect.void,
      stop: Effect.void,
      turn: (turn) => turn
    }
    return Layer.mergeAll(Layer.succeed(Memory, memory), Layer.succeed(Inbox, inbox), Layer.succeed(Compactor, compactor))
  }
  const tool = (name, description) => ({
    definition: { name, description, input_schema: { type: "object", properties: {} } },
    run: () => Effect.succeed({ content: "done", isError: false })
  })
  const stubClaws = InMemoryClaws.layer([tool("get_time", "Get the current time"), tool("roll_dice", "Roll dice"), tool("system_info", "System information")])

  const program = Effect.scoped(Effect.gen(function*() {
    const interact = yield* InMemoryInteract.make
    const provider = ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["PLANCKCLAW_DIR", memoryDir], ["PLANCKCLAW_MODEL", "bench-model"], ["CLAWS_DIR", clawsDir]])), { preserveEmptyStrings: true })
    const layer = (stub ? Agent.layer.pipe(Layer.provideMerge(stubMemory())) : Layer.merge(Agent.layerWithMemory, MemoryHold.layer)).pipe(
      Layer.provide(Layer.merge(Layer.succeed(Brain, brain), stub ? stubClaws : ScriptClaws.layer.pipe(Layer.provide(SpawnHelper.layer)))),
      Layer.provideMerge(InMemoryInteract.layer(interact)),
      Layer.provide(ConfigProvider.layer(provider))
    )
    const context = yield* Layer.build(layer)
    yield* Intake.run.pipe(Effect.provide(context), Effect.forkScoped)
    const say = interact.offer({ channel: "bench", text: MESSAGE }).pipe(Effect.andThen(Queue.take(interact.replies)))
    const check = (reply) => reply.text === REPLY ? Effect.void : Effect.die(new Error(`unexpected reply ${reply.text}`))
    for (let i = 0; i < WARMUP; i++) yield* Effect.flatMap(say, check)
    globalThis.gc?.()
    if (alloc) yield* Effect.promise(() => startAllocationSampling())
    const samples = new Float64Array(turns)
    const grown = []
    const heapBefore = v8.getHeapStatistics().used_heap_size
    const from = nowUs()
    for (let i = 0; i < turns; i++) {
      const heap0 = v8.getHeapStatistics().used_heap_size
      const t0 = performance.now()
      const reply = yield* say
      samples[i] = performance.now() - t0
      const delta = v8.getHeapStatistics().used_heap_size - heap0
      if (delta > 0) grown.push(delta)
      yield* check(reply)
    }
    const to = nowUs()
    const allocation = alloc ? yield* Effect.promise(() => stopAllocationSampling(memoryDir)) : undefined
    samples.sort()
    grown.sort((a, b) => a - b)
    return {
      from,
      to,
      p50: samples[Math.floor(turns / 2)],
      p99: samples[Math.floor(turns * 0.99)],
      bytesPerTurn: grown[Math.floor(grown.length / 2)] ?? Number.NaN,
      meanMs: (to - from) / 1000 / turns,
      heapGrowthMb: (globalThis.gc?.(), v8.getHeapStatistics().used_heap_size - heapBefore) / 1024 / 1024,
      allocation
    }
  })).pipe(Effect.provide(Layer.merge(Logging.layer(false), Layer.succeed(References.MinimumLogLevel, "Warn"))))
  process.send(await Effect.runPromise(program))
}

// --alloc: V8's sampling heap profiler, counting objects the collector already freed too.
let session
const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (error, result) => error ? reject(error) : resolve(result)))
const startAllocationSampling = async () => {
  const inspector = await import("node:inspector")
  session = new inspector.Session()
  session.connect()
  await post("HeapProfiler.startSampling", { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
}
const stopAllocationSampling = async (dir) => {
  const { profile } = await post("HeapProfiler.stopSampling")
  const file = path.join(path.dirname(dir), "allocation.heapprofile")
  fs.writeFileSync(file, JSON.stringify(profile))
  return file
}

if (process.argv[2] === "--child") {
  await child(JSON.parse(process.argv[3]))
  process.exit(0)
}

// ---------------------------------------------------------------------------
// Parent

const stub = process.argv.includes("--stub")
const alloc = process.argv.includes("--alloc")
const args = process.argv.slice(2).filter((arg) => arg !== "--stub" && arg !== "--alloc")

const runChild = (dist, turns, nodeArgs = []) =>
  new Promise((resolve, reject) => {
    const { dir, remove } = makeWorkDir("profile-memory")
    const options = { dist: path.resolve(dist), turns, memoryDir: path.join(dir, "memory"), stub, alloc }
    const proc = fork(new URL(import.meta.url).pathname, ["--child", JSON.stringify(options)], {
      execArgv: ["--expose-gc", ...nodeArgs.map((arg) => arg.replace("$DIR", dir))],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    let result
    proc.on("message", (message) => {
      result = message
    })
    proc.once("error", reject)
    proc.once("exit", (code) => (code === 0 && result !== undefined ? resolve({ ...result, dir, remove }) : reject(new Error(`child failed (${code})`))))
  })

if (args[0] === "--compare") {
  const [a, b] = [args[1], args[2]]
  const runs = Number(args[3] ?? 4)
  const turns = 3000
  const results = { [a]: [], [b]: [] }
  for (let i = 0; i < runs; i++) {
    for (const dist of i % 2 === 0 ? [a, b] : [b, a]) {
      const r = await runChild(dist, turns)
      r.remove()
      results[dist].push(r)
      console.log(`${dist}: p50 ${round(r.p50, 4)} ms, p99 ${round(r.p99, 4)} ms, mean ${round(r.meanMs, 4)} ms, heap +${round(r.heapGrowthMb, 1)} MiB, ~${Math.round(r.bytesPerTurn / 1024)} KiB/turn`)
    }
  }
  for (const dist of [a, b]) {
    const p50s = results[dist].map((r) => r.p50).sort((x, y) => x - y)
    const kib = results[dist].map((r) => r.bytesPerTurn / 1024).sort((x, y) => x - y)
    console.log(`${dist}: median of run p50s ${round(p50s[Math.floor(p50s.length / 2)], 4)} ms; ~${Math.round(kib[Math.floor(kib.length / 2)])} KiB/turn`)
  }
  process.exit(0)
}

const TURNS = Number(args[0] ?? 3000)
const result = await runChild(distDir, TURNS, alloc ? [] : ["--cpu-prof", "--cpu-prof-dir=$DIR"])
if (alloc) {
  // Bytes allocated per turn, by allocating function (self) and by project function on the stack.
  const { head } = JSON.parse(fs.readFileSync(result.allocation, "utf8"))
  const self = new Map()
  const project = new Map()
  let total = 0
  const walk = (node, stack) => {
    const frame = node.callFrame
    const here = [...stack, frame]
    const bytes = node.selfSize
    if (bytes > 0) {
      total += bytes
      const key = label(frame)
      self.set(key, (self.get(key) ?? 0) + bytes)
      const seen = new Set()
      for (const f of here) {
        if (!f.url.includes(`${distDir}/`)) continue
        const k = label(f)
        if (seen.has(k)) continue
        seen.add(k)
        project.set(k, (project.get(k) ?? 0) + bytes)
      }
    }
    for (const c of node.children) walk(c, here)
  }
  walk(head, [])
  const kib = (bytes) => `${round(bytes / TURNS / 1024, 2)} KiB/turn (${round((100 * bytes) / total, 1)} %)`
    console.log(`# Allocation of ${TURNS} in-memory plain turns${stub ? " (stubbed memory)" : ""}: ${round(total / TURNS / 1024, 1)} KiB/turn sampled`)
  console.log("\n## Allocating functions, top 40")
  for (const [key, bytes] of top(self, 40)) console.log(`${kib(bytes)}  ${key}`)
  console.log("\n## Project functions on the stack, top 30")
  for (const [key, bytes] of top(project, 30)) console.log(`${kib(bytes)}  ${key}`)
  process.exit(0)
}
const dir = result.dir
const profileFile = fs.readdirSync(dir).find((name) => name.endsWith(".cpuprofile"))
if (profileFile === undefined) throw new Error(`no .cpuprofile in ${dir}`)
const profile = JSON.parse(fs.readFileSync(path.join(dir, profileFile), "utf8"))
const { total, self, byFile, inclusiveProject } = summarise(profile, { from: result.from, to: result.to })
const perTurn = (us) => `${round(us / TURNS, 1)} µs/turn (${round((100 * us) / total, 1)} %)`

console.log(`# Profile of ${TURNS} in-memory plain turns (after ${WARMUP} untimed), ${new Date().toISOString()}`)
console.log(`p50 ${round(result.p50, 4)} ms, mean ${round(result.meanMs, 4)} ms (profiler on), heap grew ${round(result.heapGrowthMb, 1)} MiB; sampled CPU ${round(total / TURNS, 1)} µs/turn, ~${Math.round(result.bytesPerTurn / 1024)} KiB allocated/turn`)
console.log("\n## Self time by file")
for (const [key, us] of top(byFile, 30)) console.log(`${perTurn(us)}  ${key}`)
console.log("\n## Self time, top 50 functions")
for (const [key, us] of top(self, 50)) console.log(`${perTurn(us)}  ${key}`)
console.log("\n## Inclusive time of project (dist/) functions, top 50")
for (const [key, us] of top(inclusiveProject, 50)) console.log(`${perTurn(us)}  ${key}`)
console.log(`\nProfile: ${path.join(dir, profileFile)}`)
