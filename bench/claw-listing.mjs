/**
 * What the claw pipes cost the agent's process, per request (not part of
 * `npm run bench`; run after `npm run build`):
 *
 *   node bench/claw-listing.mjs [N] [DIST_B]      default 4000 per variant
 *
 * Variants, interleaved in rounds, each on its own FIFO pair:
 *
 * - list, instant: FifoClaws.list against bench/claw.mjs, a separate process
 *   answering at once (the agent's side alone).
 * - list, shipped: FifoClaws.list against the built-in bridge in this
 *   process (ScriptClaws watched on claws/, served by serveClaws over the
 *   same kind of FIFO pair), as `run --claw scripts` does on every message.
 * - call, instant: FifoClaws.call("get_time", {}) against bench/claw.mjs.
 *
 * With DIST_B (another build's dist/, kept inside this checkout, e.g.
 * `cp -r dist bench/.work/dist-before`), each variant runs for dist/ and for
 * DIST_B, interleaved, so the two builds are compared in the same sitting.
 * Prints the median wall µs per request and this process's main-thread CPU
 * µs per request (kernel accounting, lib/cpu.mjs). On a shared machine,
 * judge by differences between variants of one run. Run with `node
 * --expose-gc --max-semi-space-size=64` to also get the bytes each request
 * leaves on the heap (allocated, between two full collections, with no
 * collection in between), which load does not change.
 */
import { PerformanceObserver } from "node:perf_hooks"
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { Duration, Effect, Exit, Scope } from "effect"
import { interleavedRuns } from "./lib/cpu.mjs"
import { median, round } from "./lib/stats.mjs"
import { benchDir, clawsDir, distDir, distFile, makeWorkDir } from "./lib/work.mjs"

const N = Number(process.argv[2] ?? 4000)
const dists = [["", distDir], ...(process.argv[3] === undefined ? [] : [["B ", path.resolve(process.argv[3])]])]
const ROUNDS = 20

const work = makeWorkDir("claw-listing")
let pairs = 0
const fifoPair = () => {
  const n = ++pairs
  const pair = { clawIn: path.join(work.dir, `claw_in_${n}`), clawOut: path.join(work.dir, `claw_out_${n}`) }
  execFileSync("mkfifo", [pair.clawIn, pair.clawOut])
  return pair
}
const children = []
const externalPair = () => {
  const pair = fifoPair()
  children.push(spawn(process.execPath, [path.join(benchDir, "claw.mjs")], {
    env: { ...process.env, PLANCKCLAW_CLAW_IN: pair.clawIn, PLANCKCLAW_CLAW_OUT: pair.clawOut },
    stdio: "inherit"
  }))
  return pair
}

const scope = Effect.runSync(Scope.make())
const build = (effect) => Effect.runPromise(Scope.provide(effect, scope))
const importFrom = (dist, file) => import(pathToFileURL(distFile(dist, file)).href)

const variants = []
for (const [tag, dist] of dists) {
  const FifoClaws = await importFrom(dist, "pipes/FifoClaws.js")
  const ScriptClaws = await importFrom(dist, "claws/ScriptClaws.js")
  const ServeClaws = await importFrom(dist, "pipes/ServeClaws.js")
  const SpawnHelper = await importFrom(dist, "runtime/process/SpawnHelper.js")
  const { Layer } = await import("effect")
  // The claws start their scripts through the spawn helper, one for the bench's scope.
  const helper = await build(Layer.build(SpawnHelper.layer))
  const instant = await build(FifoClaws.make({ paths: externalPair() }))
  const shippedPair = fifoPair()
  const scripts = await build(Effect.provideContext(ScriptClaws.makeWatched({
    directory: clawsDir,
    timeout: Duration.seconds(30),
    outputMax: 16_384,
    withheldSecrets: []
  }), helper))
  await build(Effect.forkScoped(ServeClaws.serveClaws(scripts, shippedPair)))
  const shipped = await build(FifoClaws.make({ paths: shippedPair }))
  const expectTools = (least) => (catalog) => {
    if (catalog.tools.length < least) throw new Error(`${catalog.tools.length} tools`)
  }
  const listInstant = Effect.map(instant.list, expectTools(1))
  const listShipped = Effect.map(shipped.list, expectTools(3))
  const call = Effect.map(instant.call("get_time", {}), (result) => {
    if (result.isError) throw new Error(result.content)
  })
  variants.push(
    [`${tag}list, instant external bridge`, () => Effect.runPromise(listInstant)],
    [`${tag}list, shipped claws, built-in bridge`, () => Effect.runPromise(listShipped)],
    [`${tag}call get_time, instant external bridge`, () => Effect.runPromise(call)]
  )
}

const { times, cpu, batch } = await interleavedRuns(variants, { n: N, rounds: ROUNDS, alternate: true })
// Bytes allocated per request: heap growth over a batch with no collection in it.
const allocated = variants.map(() => undefined)
if (typeof globalThis.gc === "function") {
  let collections = 0
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().length
  })
  observer.observe({ entryTypes: ["gc"] })
  const heapUsed = () => process.memoryUsage().heapUsed
  for (let k = 0; k < variants.length; k++) {
    const samples = []
    for (let attempt = 0; attempt < 5; attempt++) {
      globalThis.gc()
      await new Promise((resolve) => setTimeout(resolve, 10))
      const before = collections
      const used0 = heapUsed()
      for (let i = 0; i < 500; i++) await variants[k][1]()
      const used1 = heapUsed()
      await new Promise((resolve) => setTimeout(resolve, 10))
      if (collections === before) samples.push((used1 - used0) / 500)
    }
    allocated[k] = samples.length === 0 ? undefined : median(samples)
  }
  observer.disconnect()
}
console.log(`Claw pipes, µs per request (n=${batch * ROUNDS} each, ${ROUNDS} interleaved rounds)`)
console.log("  wall p50   CPU/req  bytes/req  variant")
for (let k = 0; k < variants.length; k++) {
  const wall = String(round(median(times[k]), 1)).padStart(10)
  const cpuUs = String(round(cpu[k] / times[k].length, 1)).padStart(9)
  const bytes = String(allocated[k] === undefined ? "-" : Math.round(allocated[k])).padStart(10)
  console.log(`${wall} ${cpuUs} ${bytes}  ${variants[k][0]}`)
}

await Effect.runPromise(Scope.close(scope, Exit.void))
// The work directory goes once the claws have exited, so none writes into it while it is removed.
await Promise.all(children.map((child) =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", resolve)
    child.kill("SIGTERM")
  })
))
work.remove()
