/**
 * The real agent from dist/ over in-memory transports, with brains that
 * answer at once, and a closed-loop driver that times each message from
 * offer to reply.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { effect, fromDist, settingsLayer, settingsProvider, warningsAndUp } from "./build.mjs"
import { REPLY, TOOL_REPLY } from "./fifo.mjs"

// The measured build's (lib/build.mjs: PLANCKCLAW_BENCH_REPO picks another checkout's).
const { Effect, Layer, Queue } = effect
const Agent = await fromDist("agent/Agent.js")
const Intake = await fromDist("agent/Intake.js")
const MemoryHold = await fromDist("memory/MemoryHold.js")
const { Brain } = await fromDist("ports/Brain.js")
const InMemoryClaws = await fromDist("claws/InMemoryClaws.js")
const ScriptClaws = await fromDist("claws/ScriptClaws.js")
const InMemoryInteract = await fromDist("interact/InMemoryInteract.js")
const Logging = await fromDist("runtime/Logging.js")
const { COMPACTION_SYSTEM } = await fromDist("agent/Prompt.js")

export { REPLY, TOOL_REPLY }

const text = (reply) => ({ content: [{ type: "text", text: reply }], stop_reason: "end_turn" })
const answer = text(REPLY)
const toolAnswer = text(TOOL_REPLY)

const summary = text("The user benchmarks the agent.")
/** Compaction asks the same brain, with the original compaction instruction as system prompt. */
const isCompaction = (request) => request.system === COMPACTION_SYSTEM

/** Answers every request at once: the same text, or a summary for compaction. */
export const instantBrain = {
  complete: (request) => Effect.succeed(isCompaction(request) ? summary : answer)
}

/**
 * One tool round: a user message gets a `tool_use` of `toolName`, the
 * tool_result that follows gets the final text.
 */
export const toolRoundBrain = (toolName) => {
  let id = 0
  return {
    complete: (request) => {
      if (isCompaction(request)) return Effect.succeed(summary)
      const last = request.messages[request.messages.length - 1]
      if (last !== undefined && typeof last.content !== "string") return Effect.succeed(toolAnswer)
      return Effect.succeed({
        content: [{ type: "tool_use", id: `toolu_bench_${++id}`, name: toolName, input: {} }],
        stop_reason: "tool_use"
      })
    }
  }
}

/** A summariser for compaction: a short summary at once. */
export const summaryBrain = { complete: () => Effect.succeed(summary) }

/** The shipped claws (or any directory of them) through the real ScriptClaws discovery. */
// Builds since the spawn helper became a scoped service need it provided (older builds have no processesLayer).
export const scriptClaws = ScriptClaws.processesLayer === undefined
  ? ScriptClaws.layer
  : Layer.provide(ScriptClaws.layer, ScriptClaws.processesLayer)

/** A get_time tool served in-process, to time a tool round without fork/exec. */
export const inProcessClaws = InMemoryClaws.layer([{
  definition: {
    name: "get_time",
    description: "Get the current time",
    input_schema: { type: "object", properties: {} }
  },
  run: () => Effect.sync(() => ({ content: `Unix timestamp: ${Math.floor(Date.now() / 1000)}`, isError: false }))
}])

/** A history line as the agent writes it. */
export const historyLine = (role, content) => `${JSON.stringify({ role, content })}\n`

/** `pairs` user/assistant exchanges of ordinary chat length. */
export const seedHistory = (pairs) => {
  let out = ""
  for (let i = 0; i < pairs; i++) {
    out += historyLine("user", `Question ${i}: what should I remember about the benchmark run?`)
    out += historyLine("assistant", `Answer ${i}: that the agent must add microseconds, not milliseconds.`)
  }
  return out
}

/**
 * Logs as the command line prints them (stderr), warnings and up only: the
 * info line each compaction writes would drown the progress lines.
 */
export const logging = Layer.merge(Logging.layer(false), warningsAndUp)

/**
 * Starts the agent (Agent.layerWithMemory + Intake.run) in the current
 * scope on `memoryDir`, with the given Brain service and Claws layer,
 * holding the directory's run lock as `planckclaw run` does.
 */
export const startAgent = ({ memoryDir, brain, claws, settings = {} }) =>
  Effect.gen(function*() {
    const interact = yield* InMemoryInteract.make
    const provider = settingsProvider(Object.entries({ PLANCKCLAW_DIR: memoryDir, PLANCKCLAW_MODEL: "bench-model", ...settings }))
    const layer = Layer.merge(Agent.layerWithMemory, MemoryHold.layer).pipe(
      Layer.provide(Layer.merge(Layer.succeed(Brain, brain), claws)),
      Layer.provideMerge(InMemoryInteract.layer(interact)),
      Layer.provide(settingsLayer(provider))
    )
    const context = yield* Layer.build(layer)
    yield* Intake.run.pipe(Effect.provide(context), Effect.forkScoped)
    return {
      say: (message) =>
        interact.offer({ channel: "bench", text: message }).pipe(Effect.andThen(Queue.take(interact.replies)))
    }
  })

const now = Effect.sync(() => performance.now())

/**
 * Sends `iterations` messages one after the other, each as soon as the
 * previous reply arrived (closed loop), after `warmup` untimed ones. Stops
 * early once `budgetMs` of timed work has passed (at least `minIterations`).
 * Fails loudly on any reply other than `expected`.
 */
export const measureTurns = (agent, options) =>
  Effect.gen(function*() {
    const { warmup = 200, iterations = 2000, minIterations = 5, budgetMs = Infinity, message, expected } = options
    const check = (reply) =>
      reply.text === expected
        ? Effect.void
        : Effect.die(new Error(`unexpected reply ${JSON.stringify(reply.text)} (expected ${JSON.stringify(expected)})`))
    for (let i = 0; i < warmup; i++) yield* Effect.flatMap(agent.say(message), check)
    globalThis.gc?.()
    const samples = []
    const start = yield* now
    for (let i = 0; i < iterations; i++) {
      const t0 = yield* now
      const reply = yield* agent.say(message)
      const t1 = yield* now
      yield* check(reply)
      samples.push(t1 - t0)
      if (i + 1 >= minIterations && t1 - start > budgetMs) break
    }
    return { samples, wallMs: (yield* now) - start }
  })

/**
 * Several closed loops side by side: each round runs a batch of every
 * workload (sized so all finish together), so a busy moment of the machine
 * weighs on each alike. `workloads`: { agent, message, expected, iterations, warmup }.
 * Returns, per workload, its latencies and the wall time they took.
 */
export const measureInterleaved = (workloads, { rounds = 40 } = {}) =>
  Effect.gen(function*() {
    for (const w of workloads) {
      yield* measureTurns(w.agent, { message: w.message, expected: w.expected, warmup: w.warmup, iterations: 0 })
    }
    const results = workloads.map(() => ({ samples: [], wallMs: 0 }))
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < workloads.length; k++) {
        const w = workloads[k]
        const batch = Math.ceil(w.iterations / rounds)
        const { samples, wallMs } = yield* measureTurns(w.agent, { message: w.message, expected: w.expected, warmup: 0, iterations: batch })
        results[k].samples.push(...samples)
        results[k].wallMs += wallMs
      }
    }
    return results
  })

/** A memory directory holding `history` (and the default soul). */
export const prepareMemory = (dir, history) => {
  fs.mkdirSync(dir, { recursive: true })
  if (history !== undefined) fs.writeFileSync(path.join(dir, "history.jsonl"), history)
  return dir
}
