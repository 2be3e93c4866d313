/**
 * The stop's grace is an Effect timeout: under the TestClock, a stop waits
 * for a turn in flight until PLANCKCLAW_STOP_GRACE has passed and not a
 * moment less, answers it if it ends first, and cuts it at the grace
 * otherwise. Real HTTP on loopback, real agent host; no real time.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as HttpServer from "effect/http/HttpServer"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import * as HttpApi from "../../../src/hosts/serve/HttpApi.js"
import { awaitPendingSleep, yieldToEventLoop } from "../../support/TestClockWait.js"
import { echoBrain, historyOf, hostLayer, lastUserText, settings, tempDir } from "./Kit.js"

const GRACE_MILLIS = 30_000

/** A POST on a connection of its own: the status and body, or the error that ended it. */
const post = (port: number, target: string, text: string) =>
  Effect.callback<{ readonly status: number; readonly body: string }, string>((resume) => {
    const request = http.request({ host: "127.0.0.1", port, method: "POST", path: target, agent: false, headers: { "content-type": "application/json" } }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") })))
      response.on("error", (error) => resume(Effect.fail(error.message)))
    })
    request.on("error", (error) => resume(Effect.fail(error.message)))
    request.end(JSON.stringify({ text }))
  })

/** The API in a scope of its own, over a brain whose first turn waits for `release`. */
const serveHeld = Effect.gen(function*() {
  const arrived = yield* Deferred.make<void>()
  const release = yield* Deferred.make<void>()
  const brain = echoBrain((request) =>
    Deferred.succeed(arrived, undefined).pipe(
      Effect.andThen(Deferred.await(release)),
      Effect.as(ScriptedBrain.text(`echo ${lastUserText(request)}`))
    )
  )
  const root = tempDir()
  const values = { PLANCKCLAW_STOP_GRACE: String(GRACE_MILLIS / 1000) }
  const scope = yield* Scope.make()
  const context = yield* Layer.buildWithScope(
    HttpApi.layer({ host: "127.0.0.1", port: 0 }).pipe(Layer.provide(hostLayer(root, brain.layer, values)), Layer.provide(settings(values))),
    scope
  )
  const address = Context.get(context, HttpServer.HttpServer).address
  const port = address._tag === "UnixPathAddress" ? 0 : address.port
  const answer = yield* Effect.forkChild(post(port, "/v1/agents/alice/messages", "held"))
  yield* Deferred.await(arrived)
  // The stop: what SIGTERM does to the command's scope.
  const stopping = yield* Effect.forkChild(Scope.close(scope, Exit.void))
  yield* awaitPendingSleep(GRACE_MILLIS)
  return { root, release, answer, stopping }
})

describe("a stop's grace (TestClock)", () => {
  it.effect("a turn that ends within the grace is answered and stored, and the stop ends with it", () =>
    Effect.gen(function*() {
      const { answer, release, root, stopping } = yield* serveHeld
      expect(stopping.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(release, undefined)
      expect(yield* Fiber.join(answer)).toEqual({ status: 200, body: JSON.stringify({ reply: "echo held", stored: true }) })
      yield* Fiber.join(stopping)
      expect(historyOf(root, "alice").map((line) => line.content)).toEqual(["held", "echo held"])
    }))

  it.effect("a turn that outlasts the grace holds the stop exactly that long, and its connection is closed then", () =>
    Effect.gen(function*() {
      const { answer, root, stopping } = yield* serveHeld
      yield* TestClock.adjust(GRACE_MILLIS - 1)
      for (let pass = 0; pass < 20; pass++) yield* yieldToEventLoop
      expect(stopping.pollUnsafe()).toBeUndefined()
      expect(answer.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      yield* Fiber.join(stopping)
      expect((yield* Effect.flip(Fiber.join(answer))).length).toBeGreaterThan(0)
      // Accepted and not answered: still journaled, for the next start.
      expect(historyOf(root, "alice")).toEqual([])
      expect(fs.readFileSync(path.join(root, "agents", "alice", ".inbox.jsonl"), "utf8")).toContain("\"held\"")
    }))
})
