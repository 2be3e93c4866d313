/**
 * 2. Claw discovery with 1, 100 and 1000 claw files: ScriptClaws.list, the
 * call every turn makes.
 * - Warm, watched (`discovery_ms_N`): what the running agent pays per
 *   message (ScriptClaws.makeWatched, as ScriptClaws.layer): two event-loop
 *   turns to let inotify events in, one directory stat, nothing else.
 * - Warm, stat scan (`discovery_scan_ms_N`): one stat per claw, as
 *   `planckclaw tools`, the fallback when the directory cannot be watched,
 *   and the background safety scan every 5 s.
 * - Cold (`discovery_cold_ms_N`): the first list of a fresh discovery (every
 *   file read and parsed).
 * Hot reload is checked on the way, on both paths (an edited, a same-size
 * edited, an added and a removed claw, and an edit by another process, each
 * seen by the very next list); any miss fails the bench.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { execFileSync } from "node:child_process"
import * as A from "./lib/agent.mjs"
import { effect, fromDist, inScope } from "./lib/build.mjs"
import { main, progress } from "./lib/child.mjs"
import { median, percentile, round } from "./lib/stats.mjs"
import { makeWorkDir } from "./lib/work.mjs"

const { Duration, Effect, Exit, Scope } = effect
const ScriptClaws = await fromDist("claws/ScriptClaws.js")
const ClawDiscovery = await fromDist("claws/ClawDiscovery.js")

const COUNTS = [1, 100, 1000]

const toolName = (i) => `bench_tool_${String(i).padStart(4, "0")}`
const clawFile = (name) =>
  `#!/bin/sh\n# A generated claw for the discovery bench.\n#TOOLS:${
    JSON.stringify({
      name,
      description: `Benchmark tool ${name}`,
      input_schema: { type: "object", properties: { text: { type: "string" } } }
    })
  }\necho "$1 ran"\n`

/**
 * N claws whose files were last modified an hour ago. Their ctime is now, so
 * discovery trusts them (settled) only 2 s after they were written, as it
 * would any claw: `whenSettled` waits for that before a warm measurement.
 */
const makeClaws = (dir, count) => {
  fs.mkdirSync(dir, { recursive: true })
  const past = new Date(Date.now() - 3600_000)
  for (let i = 0; i < count; i++) {
    const file = path.join(dir, `claw${String(i).padStart(4, "0")}.sh`)
    fs.writeFileSync(file, clawFile(toolName(i)), { mode: 0o755 })
    fs.utimesSync(file, past, past)
  }
  return Date.now()
}
const whenSettled = (writtenAt) => new Promise((resolve) => setTimeout(resolve, Math.max(0, writtenAt + 2100 - Date.now())))

const config = (directory) => ({ directory, timeout: Duration.seconds(30), outputMax: 16_384, withheldSecrets: [] })
const now = Effect.sync(() => performance.now())

const expect = (condition, what) => (condition ? Effect.void : Effect.die(new Error(`hot reload: ${what}`)))
const names = (catalog) => new Set(catalog.tools.map((tool) => tool.name))

/** Median and p99 of `iterations` lists after a warm-up. */
const warmLists = (claws, count) =>
  Effect.gen(function*() {
    for (let i = 0; i < 50; i++) yield* claws.list
    globalThis.gc?.()
    const samples = []
    const iterations = count >= 1000 ? 1000 : 2000
    for (let i = 0; i < iterations; i++) {
      const t0 = yield* now
      yield* claws.list
      samples.push((yield* now) - t0)
    }
    return { ms: round(median(samples), 4), p99Ms: round(percentile(samples, 99), 4) }
  })

/** Edits, same-size edits, additions, removals and another process's edit: each seen by the next list. */
const hotReload = (claws, dir, count, how) =>
  Effect.gen(function*() {
    const check = (condition, what) => expect(condition, `${how}: ${what}`)
    const first = path.join(dir, "claw0000.sh")
    fs.writeFileSync(first, clawFile("renamed_tool_0"))
    let seen = names(yield* claws.list)
    yield* check(seen.has("renamed_tool_0") && !seen.has(toolName(0)), "an edited claw was not re-read")
    // Same size, written within the same mtime tick: still seen (recent files are re-read until settled).
    fs.writeFileSync(first, clawFile("renamed_tool_1"))
    seen = names(yield* claws.list)
    yield* check(seen.has("renamed_tool_1") && !seen.has("renamed_tool_0"), "a same-size edit was not re-read")
    fs.writeFileSync(path.join(dir, "zz_added.sh"), clawFile("added_tool"))
    seen = names(yield* claws.list)
    yield* check(seen.has("added_tool") && seen.size === count + 1, "an added claw was not seen")
    fs.unlinkSync(path.join(dir, "zz_added.sh"))
    seen = names(yield* claws.list)
    yield* check(!seen.has("added_tool") && seen.size === count, "a removed claw was still listed")
    // Another process writes, exits, and the next list follows at once.
    execFileSync("/bin/sh", ["-c", `printf '%s' "$1" > "$2"`, "sh", clawFile("by_another_process"), first])
    seen = names(yield* claws.list)
    yield* check(seen.has("by_another_process"), "another process's edit was not seen")
    fs.writeFileSync(first, clawFile(toolName(0)))
    yield* claws.list
  })

/** System calls of a warm watched list, counted by the discovery itself (exact). */
const watchedStatsPerList = (dir) => {
  const discovery = ClawDiscovery.makeDiscovery(dir)
  const stop = discovery.watch()
  discovery.scan()
  const before = discovery.counts()
  for (let i = 0; i < 100; i++) discovery.scan()
  const after = discovery.counts()
  stop()
  return (after.directoryStats + after.fileStats + after.fileReads - before.directoryStats - before.fileStats - before.fileReads) / 100
}

const measureCount = (dir, count) =>
  Effect.gen(function*() {
    // Cold: a fresh discovery reads and parses every file.
    const cold = []
    for (let i = 0; i < 7; i++) {
      const claws = yield* ScriptClaws.make(config(dir))
      const t0 = yield* now
      const catalog = yield* claws.list
      cold.push((yield* now) - t0)
      if (catalog.tools.length !== count) return yield* Effect.die(new Error(`found ${catalog.tools.length} of ${count} tools`))
    }
    // Warm, stat scan: the same discovery, nothing changed, one stat per claw.
    const scanning = yield* ScriptClaws.make(config(dir))
    const scan = yield* warmLists(scanning, count)
    yield* hotReload(scanning, dir, count, "stat scan")
    // Warm, watched: what the running agent pays.
    const scope = yield* Scope.make()
    const watching = yield* inScope(ScriptClaws.makeWatched(config(dir)), scope)
    const watched = yield* warmLists(watching, count)
    yield* hotReload(watching, dir, count, "watched")
    yield* Scope.close(scope, Exit.void)

    return {
      coldMs: round(median(cold), 4),
      warmMs: watched.ms,
      warmP99Ms: watched.p99Ms,
      scanMs: scan.ms,
      scanP99Ms: scan.p99Ms,
      syscallsPerWatchedList: watchedStatsPerList(dir)
    }
  })

/**
 * The whole agent on `count` claws: turn latency, and an edit between two
 * messages seen by the second (the brain reports whether the tool exists).
 */
const agentOnClaws = (work, dir, count) =>
  Effect.scoped(Effect.gen(function*() {
    const brain = {
      complete: (request) =>
        Effect.succeed({
          content: [{ type: "text", text: (request.tools ?? []).some((tool) => tool.name === "edited_between_messages") ? "present" : "absent" }],
          stop_reason: "end_turn"
        })
    }
    const memoryDir = A.prepareMemory(path.join(work.dir, `memory-${count}`), A.seedHistory(20))
    const agent = yield* A.startAgent({ memoryDir, brain, claws: A.scriptClaws, settings: { CLAWS_DIR: dir } })
    const turns = yield* A.measureTurns(agent, { message: "hello", expected: "absent", warmup: 100, iterations: 500 })
    const before = yield* agent.say("is the tool there?")
    fs.writeFileSync(path.join(dir, "claw0000.sh"), clawFile("edited_between_messages"))
    const after = yield* agent.say("is the tool there now?")
    if (before.text !== "absent" || after.text !== "present") {
      return yield* Effect.die(new Error(`hot reload through the agent: got ${before.text} then ${after.text}`))
    }
    return round(median(turns.samples), 4)
  })).pipe(Effect.provide(A.logging))

main(async () => {
  const work = makeWorkDir("discovery")
  try {
    const metrics = {}
    const detail = {}
    const dirs = COUNTS.map((count) => path.join(work.dir, `claws-${count}`))
    const agentDir = path.join(work.dir, "claws-agent")
    let writtenAt = 0
    for (const [index, count] of COUNTS.entries()) writtenAt = makeClaws(dirs[index], count)
    writtenAt = makeClaws(agentDir, 1000)
    await whenSettled(writtenAt)
    for (const [index, count] of COUNTS.entries()) {
      const measured = measureCount(dirs[index], count).pipe(Effect.provide(A.logging))
      // Builds since the spawn helper became a scoped service need it provided (older builds have no processesLayer).
      const result = await Effect.runPromise(
        ScriptClaws.processesLayer === undefined ? measured : Effect.provide(measured, ScriptClaws.processesLayer)
      )
      progress(
        `${count} claws: warm ${result.warmMs} ms watched (p99 ${result.warmP99Ms}, ${result.syscallsPerWatchedList} stat per list), ` +
          `${result.scanMs} ms stat scan (p99 ${result.scanP99Ms}), cold ${result.coldMs} ms; hot reload ok on both`
      )
      metrics[`discovery_ms_${count}`] = result.warmMs
      metrics[`discovery_scan_ms_${count}`] = result.scanMs
      metrics[`discovery_cold_ms_${count}`] = result.coldMs
      detail[count] = result
    }
    // The agent itself on 1000 claws, with an edit between two messages.
    const turnMs = await Effect.runPromise(agentOnClaws(work, agentDir, 1000))
    progress(`agent turn with 1000 claws: p50 ${turnMs} ms; edit between two messages seen by the second`)
    metrics.turn_p50_ms_memory_1000_claws = turnMs
    metrics.discovery_hot_reload = true
    return { metrics, detail }
  } finally {
    work.remove()
  }
})
