/**
 * One cluster runner for the tests and the bench, run as `node runner.mjs`
 * (so a SIGKILL hits the runner itself): `planckclaw serve --cluster` as
 * built in dist/, with an in-process brain that answers `reply to <text>`
 * (after RUNNER_BRAIN_MS, default 0) and no tools. Settings come from the
 * environment (PLANCKCLAW_DATABASE_URL, PLANCKCLAW_RUNNER_ADDRESS, ...);
 * the HTTP API listens on RUNNER_HTTP (default 127.0.0.1:0) and announces
 * its address on stderr. With RUNNER_CALLS, every brain call appends the
 * user text it answered to that file. With RUNNER_SUMMARY_HANGS=1, a
 * compaction's summary request is noted there and never answered (a runner
 * to kill mid-compaction). A message `schedule_add {JSON}` is answered with
 * a call of the schedule tool with that input, then `scheduled` (the model
 * setting a reminder in chat).
 */
import * as fs from "node:fs"
import { Effect, Fiber, Layer, References } from "effect"
import { Brain } from "../../../dist/ports/Brain.js"
import * as InMemoryClaws from "../../../dist/claws/InMemoryClaws.js"
import * as ClusterServe from "../../../dist/hosts/cluster/ClusterServe.js"
import * as HttpApi from "../../../dist/hosts/serve/HttpApi.js"

const delay = Number(process.env.RUNNER_BRAIN_MS ?? 0)
const calls = process.env.RUNNER_CALLS
const summaryHangs = process.env.RUNNER_SUMMARY_HANGS === "1"

const lastUserText = (request) => {
  const last = request.messages[request.messages.length - 1]
  return typeof last.content === "string" ? last.content : last.content.map((block) => block.text ?? "").join("")
}

const brain = Layer.succeed(Brain, {
  complete: (request) =>
    Effect.gen(function*() {
      if (delay > 0) yield* Effect.sleep(delay)
      const text = lastUserText(request)
      if (calls !== undefined) fs.appendFileSync(calls, `${JSON.stringify(text)}\n`)
      if (summaryHangs && text.startsWith("EXISTING SUMMARY:")) return yield* Effect.never
      const last = request.messages[request.messages.length - 1]
      if (typeof last.content === "string" && last.content.startsWith("schedule_add ")) {
        const input = JSON.parse(last.content.slice("schedule_add ".length))
        return { content: [{ type: "tool_use", id: "t1", name: "schedule_add", input }], stop_reason: "tool_use" }
      }
      if (typeof last.content !== "string" && last.content.some((block) => block.type === "tool_result")) {
        return { content: [{ type: "text", text: `scheduled: ${last.content.map((block) => block.content).join("")}` }], stop_reason: "end_turn" }
      }
      return { content: [{ type: "text", text: `reply to ${text}` }], stop_reason: "end_turn" }
    })
})

const listen = HttpApi.parseListen(process.env.RUNNER_HTTP ?? "127.0.0.1:0")
if (listen._tag === "Failure") throw new Error(listen.failure)

const main = Layer.launch(ClusterServe.layer(listen.success).pipe(
  Layer.provide(Layer.merge(brain, InMemoryClaws.layer([]))),
  Layer.provide(Layer.succeed(References.MinimumLogLevel, process.env.RUNNER_LOG === "debug" ? "Debug" : "Info"))
)).pipe(
  Effect.catchCause((cause) => Effect.sync(() => {
    process.stderr.write(`runner failed: ${cause}\n`)
    process.exitCode = 1
  }))
)

const fiber = Effect.runFork(main)
process.on("SIGTERM", () => Effect.runFork(Fiber.interrupt(fiber)))
