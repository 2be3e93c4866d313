/**
 * The agent host of `serve` (from dist/, instant brain, no tools) over a
 * fresh agents directory, sent ROUNDS messages per agent to AGENTS agents
 * (each round all agents at once), then stopped. Run under strace by
 * bench/serve-syscalls.mjs:
 *
 *   node bench/lib/serve-host.mjs DIR AGENTS ROUNDS
 */
import * as path from "node:path"
import { effect, fromDist, settingsLayer, settingsProvider, warningsAndUp } from "./build.mjs"

const { Context, Effect, Layer } = effect
const { Brain } = await fromDist("ports/Brain.js")
const InMemoryClaws = await fromDist("claws/InMemoryClaws.js")
const AgentHost = await fromDist("hosts/serve/AgentHost.js")

const [dir, agents, rounds] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])]
const instantBrain = Layer.succeed(Brain, {
  complete: () => Effect.succeed({ content: [{ type: "text", text: "Noted." }], stop_reason: "end_turn" })
})
const settings = settingsProvider([
  ["PLANCKCLAW_AGENTS_DIR", path.join(dir, "agents")],
  ["PLANCKCLAW_DIR", path.join(dir, "memory")]
])
const layer = AgentHost.layer.pipe(
  Layer.provide(Layer.merge(instantBrain, InMemoryClaws.layer([]))),
  Layer.provide(Layer.merge(settingsLayer(settings), warningsAndUp))
)
const ids = Array.from({ length: agents }, (_, n) => `agent-${n}`)

await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const host = Context.get(yield* Layer.build(layer), AgentHost.AgentHost)
  for (let round = 0; round < rounds; round++) {
    yield* Effect.forEach(ids, (id) => host.send(id, { text: `Message ${round}.` }), { concurrency: "unbounded", discard: true })
  }
})))
