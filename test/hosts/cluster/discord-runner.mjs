/**
 * A cluster runner that also answers Discord, as `planckclaw serve --cluster
 * --bridge discord` runs (built code from dist/), with an in-process brain
 * that answers `reply to <text>`. Settings come from the environment, as for
 * runner.mjs; RUNNER_DISCORD=0 leaves Discord to other runners. With
 * RUNNER_CALLS, every brain call appends the user text it is answering to
 * that file when it starts. A text containing `[hold]` is
 * held until the named pipe RUNNER_HOLD has been opened, written and closed
 * by the test: a slow brain the test controls, without sleeps.
 */
import * as fs from "node:fs"
import { Effect, Fiber, Layer, References } from "effect"
import { Brain } from "../../../dist/ports/Brain.js"
import * as InMemoryClaws from "../../../dist/claws/InMemoryClaws.js"
import * as ClusterServe from "../../../dist/hosts/cluster/ClusterServe.js"
import * as HttpApi from "../../../dist/hosts/serve/HttpApi.js"

const calls = process.env.RUNNER_CALLS
const hold = process.env.RUNNER_HOLD

const lastUserText = (request) => {
  const last = request.messages[request.messages.length - 1]
  return typeof last.content === "string" ? last.content : last.content.map((block) => block.text ?? "").join("")
}

/** Resolves once `fifo` gives its first bytes (or ends). */
const firstChunk = (fifo) =>
  new Promise((resolve, reject) => {
    const stream = fs.createReadStream(fifo)
    stream.once("data", () => {
      stream.destroy()
      resolve()
    })
    stream.once("end", resolve)
    stream.once("error", reject)
  })

const brain = Layer.succeed(Brain, {
  complete: (request) =>
    Effect.gen(function*() {
      const text = lastUserText(request)
      if (calls !== undefined) fs.appendFileSync(calls, `${JSON.stringify(text)}\n`)
      if (hold !== undefined && text.includes("[hold]")) yield* Effect.promise(() => firstChunk(hold))
      return { content: [{ type: "text", text: `reply to ${text}` }], stop_reason: "end_turn" }
    })
})

const listen = HttpApi.parseListen(process.env.RUNNER_HTTP ?? "127.0.0.1:0")
if (listen._tag === "Failure") throw new Error(listen.failure)

const main = ClusterServe.serve(listen.success, { discord: process.env.RUNNER_DISCORD !== "0" }).pipe(
  Effect.provide(Layer.merge(brain, InMemoryClaws.layer([]))),
  Effect.provideService(References.MinimumLogLevel, process.env.RUNNER_LOG === "debug" ? "Debug" : "Info"),
  Effect.catchCause((cause) => Effect.sync(() => {
    process.stderr.write(`runner failed: ${cause}\n`)
    process.exitCode = 1
  }))
)

const fiber = Effect.runFork(main)
process.on("SIGTERM", () => Effect.runFork(Fiber.interrupt(fiber)))
