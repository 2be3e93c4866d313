/**
 * What one round trip on a FIFO pair costs this process, the agent's side
 * (not part of `npm run bench`; run after `npm run build`):
 *
 *   node bench/exchange.mjs [ROUND_TRIPS]        default 4000 per variant
 *
 * Variants, interleaved in rounds, each against its own FIFO pair:
 *
 * - brain exchange: the far end is bench/brain.mjs, a separate process
 *   answering at once, as in the turn bench.
 *   - callbacks: a net.Socket write and a 'data' callback, no Effect (the
 *     do-nothing agent's way).
 *   - one Effect.callback per request over the same kind of sockets.
 *   - makeExchange(...).ask from dist/pipes/Exchange.js.
 * - interact: a client in this process writes `bench\tping\n` to
 *   interact_in and waits for the reply line on interact_out.
 *   - callbacks: the agent's side as plain sockets and a line splitter.
 *   - FifoInteract from dist/pipes/FifoInteract.js served by the real
 *     dist/agent/Intake.js, with an agent that only sends the reply and an inbox
 *     that journals nothing.
 *
 * Prints, per variant, the median wall µs per round trip and this process's
 * main-thread CPU µs per round trip (kernel accounting, lib/cpu.mjs; the far
 * ends of the brain variants run in other processes, the interact client in
 * this one, the same for both interact variants). On a shared machine, judge
 * by the CPU column and by differences between variants of one run.
 */
import { execFileSync, spawn } from "node:child_process"
import * as path from "node:path"
import { Effect, Exit, Option, Scope } from "effect"
import { Agent } from "../dist/agent/AgentService.js"
import * as Intake from "../dist/agent/Intake.js"
import { Interact } from "../dist/ports/Interact.js"
import { Inbox } from "../dist/memory/Inbox.js"
import { makeExchange } from "../dist/pipes/Exchange.js"
import * as FifoInteract from "../dist/pipes/FifoInteract.js"
import { interleavedRuns } from "./lib/cpu.mjs"
import { onFrames, openFifo } from "./lib/fifo.mjs"
import { median, round } from "./lib/stats.mjs"
import { benchDir, makeWorkDir } from "./lib/work.mjs"

const N = Number(process.argv[2] ?? 4000)
const ROUNDS = 20
const REQUEST = `${JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "x" }] })}\n\n`

const { dir, remove } = makeWorkDir("exchange")
const fifoPair = (name) => {
  const pair = { in: path.join(dir, `${name}_in`), out: path.join(dir, `${name}_out`) }
  execFileSync("mkfifo", [pair.in, pair.out])
  return pair
}
const brains = []
const brainPair = (name) => {
  const pair = fifoPair(name)
  brains.push(spawn(process.execPath, [path.join(benchDir, "brain.mjs")], {
    env: { ...process.env, PLANCKCLAW_BRAIN_IN: pair.in, PLANCKCLAW_BRAIN_OUT: pair.out },
    stdio: "inherit"
  }))
  return pair
}

/** Plain sockets: `ask(request, done)` writes, `done` gets the next frame ended by `separator`. */
const callbackPair = (requestPath, answerPath, separator) => {
  const requests = openFifo(requestPath, "write")
  const answers = openFifo(answerPath, "read")
  const waiting = []
  onFrames(answers, separator, (frame) => waiting.shift()?.(frame))
  return {
    ask: (request, done) => {
      waiting.push(done)
      requests.write(request)
    },
    close: () => {
      requests.destroy()
      answers.destroy()
    }
  }
}

const closers = []
const scope = Effect.runSync(Scope.make())
const build = (effect) => Effect.runPromise(Scope.provide(effect, scope))

// Brain exchange.
const raw = callbackPair(...Object.values(brainPair("a")), "\n\n")
closers.push(raw.close)
const askPromise = () => new Promise((resolve) => raw.ask(REQUEST, resolve))
const askAsync = Effect.callback((resume) => raw.ask(REQUEST, (block) => resume(Effect.succeed(block))))
const real = brainPair("b")
const exchange = await build(makeExchange({ requestPath: real.in, answerPath: real.out, maxAnswerBytes: 1 << 24 }))
const askReal = exchange.ask(REQUEST, "30 seconds")

// Interact, callbacks: the agent's side echoes each line back as a reply.
const rawInteract = fifoPair("c")
const agentOut = openFifo(rawInteract.out, "write")
const agentIn = openFifo(rawInteract.in, "read")
onFrames(agentIn, "\n", (line) => agentOut.write(`${line.slice(0, line.indexOf("\t"))}\tpong\n`))
const rawClient = callbackPair(rawInteract.in, rawInteract.out, "\n")
closers.push(rawClient.close, () => agentOut.destroy(), () => agentIn.destroy())

// Interact, FifoInteract served by the real Intake, with an agent that only
// replies and an inbox that journals nothing.
const realInteract = fifoPair("d")
let accepted = 0
const inbox = {
  recovered: [],
  accept: (message) => Effect.sync(() => ({ id: ++accepted, ...message, reply: Option.none() })),
  delivered: () => Effect.void
}
const agent = {
  respond: () => Effect.succeed(Option.some({ reply: "pong", stored: false, toolCalls: [], usage: { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 } })),
  delivered: () => Effect.void
}
await build(Effect.gen(function*() {
  const interact = yield* FifoInteract.make({ paths: { interactIn: realInteract.in, interactOut: realInteract.out } })
  yield* Intake.run.pipe(
    Effect.provideService(Agent, agent),
    Effect.provideService(Interact, interact),
    Effect.provideService(Inbox, inbox),
    Effect.forkScoped
  )
}))
const realClient = callbackPair(realInteract.in, realInteract.out, "\n")
closers.push(realClient.close)
const ping = (client) => new Promise((resolve) => client.ask("bench\tping\n", resolve))

const variants = [
  ["brain: callbacks (socket write + 'data')", () => askPromise()],
  ["brain: one Effect.callback per request", () => Effect.runPromise(askAsync)],
  ["brain: makeExchange(...).ask, dist/pipes/Exchange.js", () => Effect.runPromise(askReal)],
  ["interact: callbacks", () => ping(rawClient)],
  ["interact: FifoInteract + Intake.run (agent only replies, inbox keeps nothing)", () => ping(realClient)]
]

const { times, cpu, batch } = await interleavedRuns(variants, { n: N, rounds: ROUNDS })
console.log(`Round trip on a FIFO pair, µs per round trip (n=${batch * ROUNDS} each, ${ROUNDS} interleaved rounds)`)
console.log("  wall p50   CPU/trip  variant")
for (let k = 0; k < variants.length; k++) {
  const wall = String(round(median(times[k]), 1)).padStart(10)
  const cpuUs = String(round(cpu[k] / times[k].length, 1)).padStart(10)
  console.log(`${wall} ${cpuUs}  ${variants[k][0]}`)
}

for (const close of closers) close()
await Effect.runPromise(Scope.close(scope, Exit.void))
for (const brain of brains) brain.kill("SIGTERM")
remove()
