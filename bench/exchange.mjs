/**
 * What one request/answer round trip on a FIFO pair costs, piece by piece
 * (not part of `npm run bench`; run after `npm run build`):
 *
 *   node bench/exchange.mjs [ROUND_TRIPS]        default 4000 per variant
 *
 * The far end is bench/brain.mjs, a separate process answering at once, as
 * in the turn bench. Variants, interleaved in rounds:
 *
 * - callbacks: a net.Socket write and a 'data' callback, no Effect.
 * - one Effect.async per request over the same sockets.
 * - the real thing: makeExchange from dist/fifo/Exchange.js (PipeEnd reader
 *   stream, block framer, queue, raceFirst with the reader's failure,
 *   per-request timeoutFail, a semaphore, owed-answer bookkeeping).
 * - the real pipe ends and framer (openReader/openWriter, framed blocks into
 *   a Queue), then the exchange's pieces added one at a time: Queue.take;
 *   + raceFirst against a Deferred; + timeoutFail; + a semaphore; + owed-answer
 *   Refs (the whole of makeExchange's ask).
 *
 * Prints the median µs per round trip of each and the step between them.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Deferred, Effect, Queue, Ref, Scope, Stream, Exit } from "effect"
import { makeExchange } from "../dist/fifo/Exchange.js"
import { framed, makeBlockFramer } from "../dist/fifo/Framing.js"
import { openReader, openWriter } from "../dist/fifo/PipeEnd.js"
import { onFrames, openFifo } from "./lib/fifo.mjs"
import { median, round } from "./lib/stats.mjs"
import { benchDir } from "./lib/work.mjs"

const N = Number(process.argv[2] ?? 4000)
const ROUNDS = 20
const REQUEST = `${JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "x" }] })}\n\n`

fs.mkdirSync(path.join(benchDir, ".work"), { recursive: true })
const dir = fs.mkdtempSync(path.join(benchDir, ".work", "exchange-"))
const pairs = ["a", "b"].map((k) => ({ brainIn: path.join(dir, `${k}_in`), brainOut: path.join(dir, `${k}_out`) }))
const { execFileSync } = await import("node:child_process")
execFileSync("mkfifo", pairs.flatMap((p) => [p.brainIn, p.brainOut]))
const brains = pairs.map((p) =>
  spawn(process.execPath, [path.join(benchDir, "brain.mjs")], {
    env: { ...process.env, PLANCKCLAW_BRAIN_IN: p.brainIn, PLANCKCLAW_BRAIN_OUT: p.brainOut },
    stdio: "inherit"
  })
)

// Pair a: raw sockets (callbacks, one Effect.async). Pair b: Effect pipe ends.
const requests = openFifo(pairs[0].brainIn, "write")
const answers = openFifo(pairs[0].brainOut, "read")
const waiting = []
onFrames(answers, "\n\n", (block) => waiting.shift()?.(block))
const askCallback = (done) => {
  waiting.push(done)
  requests.write(REQUEST)
}
const askPromise = () => new Promise((resolve) => askCallback(resolve))
const askAsync = Effect.async((resume) => askCallback((block) => resume(Effect.succeed(block))))

const scope = Effect.runSync(Scope.make())
const build = (effect) => Effect.runPromise(Scope.extend(effect, scope))
const real = await build(makeExchange({ requestPath: pairs[1].brainIn, answerPath: pairs[1].brainOut, maxAnswerBytes: 1 << 24 }))
// The same pipe ends again would steal answers from `real`: a third pair for the pieces.
const third = { brainIn: path.join(dir, "c_in"), brainOut: path.join(dir, "c_out") }
execFileSync("mkfifo", [third.brainIn, third.brainOut])
brains.push(spawn(process.execPath, [path.join(benchDir, "brain.mjs")], {
  env: { ...process.env, PLANCKCLAW_BRAIN_IN: third.brainIn, PLANCKCLAW_BRAIN_OUT: third.brainOut },
  stdio: "inherit"
}))
const pieces = await build(Effect.gen(function*() {
  const writer = yield* openWriter(third.brainIn)
  const reader = yield* openReader(third.brainOut)
  const queue = yield* Queue.bounded(16)
  const failed = yield* Deferred.make()
  yield* reader.chunks.pipe(framed(() => makeBlockFramer(1 << 24)), Stream.runForEach((a) => Queue.offer(queue, a)), Effect.forkScoped)
  const lock = yield* Effect.makeSemaphore(1)
  const owed = yield* Ref.make(0)
  const take = Queue.take(queue)
  const raced = Effect.raceFirst(Queue.take(queue), Deferred.await(failed))
  const timed = (e) => Effect.timeoutFail(e, { duration: "30 seconds", onTimeout: () => new Error("timeout") })
  return {
    queue: Effect.zipRight(writer.write(REQUEST), take),
    race: Effect.zipRight(writer.write(REQUEST), raced),
    timeout: timed(Effect.zipRight(writer.write(REQUEST), raced)),
    semaphore: lock.withPermits(1)(timed(Effect.zipRight(writer.write(REQUEST), raced))),
    owed: lock.withPermits(1)(Effect.gen(function*() {
      for (const _ of yield* Queue.takeAll(queue)) yield* Ref.update(owed, (n) => Math.max(0, n - 1))
      while ((yield* Ref.get(owed)) > 0) yield* Ref.update(owed, (n) => n - 1)
      yield* Ref.update(owed, (n) => n + 1)
      const answer = yield* timed(Effect.zipRight(writer.write(REQUEST), raced))
      yield* Ref.update(owed, (n) => n - 1)
      return answer
    }))
  }
}))

const variants = [
  ["callbacks (socket write + 'data')", () => askPromise()],
  ["one Effect.async per request", () => Effect.runPromise(askAsync)],
  ["Effect pipe ends + framer + Queue.take", () => Effect.runPromise(pieces.queue)],
  ["  + raceFirst with the reader's Deferred", () => Effect.runPromise(pieces.race)],
  ["  + timeoutFail per request", () => Effect.runPromise(pieces.timeout)],
  ["  + semaphore", () => Effect.runPromise(pieces.semaphore)],
  ["  + owed-answer Refs (= makeExchange's ask)", () => Effect.runPromise(pieces.owed)],
  ["makeExchange(...).ask, dist/fifo/Exchange.js", () => Effect.runPromise(real.ask(REQUEST, "30 seconds"))]
]

const times = variants.map(() => [])
for (const [, run] of variants) for (let i = 0; i < 300; i++) await run()
for (let r = 0; r < ROUNDS; r++) {
  for (let k = 0; k < variants.length; k++) {
    const run = variants[k][1]
    const batch = Math.ceil(N / ROUNDS)
    for (let i = 0; i < batch; i++) {
      const t0 = performance.now()
      await run()
      times[k].push((performance.now() - t0) * 1000)
    }
  }
}
let previous
console.log(`Round trip on a FIFO pair to bench/brain.mjs, median µs (n=${N} each, ${ROUNDS} interleaved rounds)`)
for (let k = 0; k < variants.length; k++) {
  const us = median(times[k])
  const step = previous === undefined || k === variants.length - 1 ? "" : `  (step ${us - previous >= 0 ? "+" : ""}${round(us - previous, 1)})`
  console.log(`${String(round(us, 1)).padStart(8)}  ${variants[k][0]}${step}`)
  previous = us
}

requests.destroy()
answers.destroy()
await Effect.runPromise(Scope.close(scope, Exit.void))
for (const brain of brains) brain.kill("SIGTERM")
fs.rmSync(dir, { recursive: true, force: true })
