/**
 * Runs one compaction (Compaction.Compactor compactNow, the code behind
 * `planckclaw compact`) on PLANCKCLAW_DIR with a brain that answers at once,
 * in a process of its own so its peak resident memory is its own. Prints
 * one JSON line: seconds, the report, and resident memory (MiB) before and
 * at peak (getrusage maxrss).
 */
import * as A from "./lib/agent.mjs"
import { effect, fromDist, settingsLayer, settingsProvider } from "./lib/build.mjs"

const { Effect, Layer, Option } = effect
const { Brain } = await fromDist("ports/Brain.js")
const Compaction = await fromDist("agent/Compactor.js")
const Memory = await fromDist("memory/Memory.js")

const memoryDir = process.argv[2]
const layer = Compaction.layer.pipe(
  Layer.provideMerge(Memory.layer),
  Layer.provide(Layer.succeed(Brain, A.summaryBrain)),
  Layer.provide(settingsLayer(settingsProvider([["PLANCKCLAW_DIR", memoryDir]])))
)

const program = Effect.gen(function*() {
  const compactor = yield* Compaction.Compactor
  const rssBefore = process.memoryUsage().rss
  const t0 = performance.now()
  const report = yield* compactor.compactNow
  const seconds = (performance.now() - t0) / 1000
  return {
    seconds,
    report: Option.getOrNull(report),
    rssBeforeMb: rssBefore / 1024 / 1024,
    peakRssMb: process.resourceUsage().maxRSS / 1024
  }
})

Effect.runPromise(program.pipe(Effect.provide(layer), Effect.provide(A.logging))).then(
  (result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`)
  },
  (error) => {
    console.error(error)
    process.exitCode = 1
  }
)
