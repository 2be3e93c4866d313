/**
 * 2. Claw discovery with 1, 100 and 1000 claw files: ScriptClaws.list, the
 * call every turn makes. Warm is the steady state (files unchanged since
 * the last list: one stat each); cold is the first list of a fresh
 * ScriptClaws (every file read and parsed). Hot reload is checked on the way
 * (an edited, added or removed claw shows on the very next list, and an edit
 * between two messages is seen by the second); any miss fails the bench.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Duration, Effect } from "effect"
import * as ScriptClaws from "../dist/claws/ScriptClaws.js"
import * as A from "./lib/agent.mjs"
import { main, progress } from "./lib/child.mjs"
import { median, percentile, round } from "./lib/stats.mjs"
import { makeWorkDir } from "./lib/work.mjs"

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

/** N claws whose files were last modified an hour ago (settled, as claws normally are). */
const makeClaws = (dir, count) => {
  fs.mkdirSync(dir, { recursive: true })
  const past = new Date(Date.now() - 3600_000)
  for (let i = 0; i < count; i++) {
    const file = path.join(dir, `claw${String(i).padStart(4, "0")}.sh`)
    fs.writeFileSync(file, clawFile(toolName(i)), { mode: 0o755 })
    fs.utimesSync(file, past, past)
  }
}

const config = (directory) => ({ directory, timeout: Duration.seconds(30), outputMax: 16_384, withheldSecrets: [] })
const now = Effect.sync(() => performance.now())

const expect = (condition, what) => (condition ? Effect.void : Effect.die(new Error(`hot reload: ${what}`)))
const names = (catalog) => new Set(catalog.tools.map((tool) => tool.name))

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
    // Warm: the same discovery, nothing changed.
    const claws = yield* ScriptClaws.make(config(dir))
    yield* claws.list
    for (let i = 0; i < 50; i++) yield* claws.list
    globalThis.gc?.()
    const warm = []
    const iterations = count >= 1000 ? 400 : 2000
    for (let i = 0; i < iterations; i++) {
      const t0 = yield* now
      yield* claws.list
      warm.push((yield* now) - t0)
    }

    // Hot reload: edit, same-size edit, add, remove; each seen by the next list.
    const first = path.join(dir, "claw0000.sh")
    fs.writeFileSync(first, clawFile("renamed_tool_0"))
    let seen = names(yield* claws.list)
    yield* expect(seen.has("renamed_tool_0") && !seen.has(toolName(0)), "an edited claw was not re-read")
    // Same size, written within the same mtime tick: still seen (recent files are re-read until settled).
    fs.writeFileSync(first, clawFile("renamed_tool_1"))
    seen = names(yield* claws.list)
    yield* expect(seen.has("renamed_tool_1") && !seen.has("renamed_tool_0"), "a same-size edit was not re-read")
    fs.writeFileSync(path.join(dir, "zz_added.sh"), clawFile("added_tool"))
    seen = names(yield* claws.list)
    yield* expect(seen.has("added_tool") && seen.size === count + 1, "an added claw was not seen")
    fs.unlinkSync(path.join(dir, "zz_added.sh"))
    seen = names(yield* claws.list)
    yield* expect(!seen.has("added_tool") && seen.size === count, "a removed claw was still listed")

    return {
      coldMs: round(median(cold), 4),
      warmMs: round(median(warm), 4),
      warmP99Ms: round(percentile(warm, 99), 4)
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
    for (const count of COUNTS) {
      const dir = path.join(work.dir, `claws-${count}`)
      makeClaws(dir, count)
      const result = await Effect.runPromise(measureCount(dir, count).pipe(Effect.provide(A.logging)))
      progress(`${count} claws: warm ${result.warmMs} ms (p99 ${result.warmP99Ms}), cold ${result.coldMs} ms; hot reload ok`)
      metrics[`discovery_ms_${count}`] = result.warmMs
      metrics[`discovery_cold_ms_${count}`] = result.coldMs
      detail[count] = result
    }
    // The agent itself on 1000 claws, with an edit between two messages.
    const dir = path.join(work.dir, "claws-agent")
    makeClaws(dir, 1000)
    const turnMs = await Effect.runPromise(agentOnClaws(work, dir, 1000))
    progress(`agent turn with 1000 claws: p50 ${turnMs} ms; edit between two messages seen by the second`)
    metrics.turn_p50_ms_memory_1000_claws = turnMs
    metrics.discovery_hot_reload = true
    return { metrics, detail }
  } finally {
    work.remove()
  }
})
