/**
 * How the built `planckclaw serve` stops (SIGTERM): idle and half-sent
 * connections are closed at once, a request that comes after the signal is
 * answered 503 with Connection: close, a turn in flight is answered within
 * PLANCKCLAW_STOP_GRACE, and one that outlasts it is cut there and answered
 * at the next start. Real processes, real sockets on loopback; the waits are
 * bounded, nothing is asserted about how long anything took.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import type * as Cli from "../../support/Cli.js"
import { line } from "../../support/Harness.js"
import * as RawHttp from "../../support/RawHttp.js"
import { eventually, within } from "../../support/Sandbox.js"
import { postMessage, setup, startServe } from "../../support/ServeKit.js"

const message = (text: string) => JSON.stringify({ text })

/** Sends SIGTERM and waits (bounded) for the exit. */
const stop = (running: Cli.Running) =>
  Effect.gen(function*() {
    running.process.kill("SIGTERM")
    return yield* within("serve to exit after SIGTERM")(running.done)
  })

describe("planckclaw serve stops (built command)", () => {
  it.live("closes an idle kept-alive connection, a silent one and a half-sent request at once, and exits 0", () =>
    Effect.gen(function*() {
      // A grace far beyond the test's bound: the exit cannot come from it.
      const t = yield* setup(AnthropicServer.echo, { PLANCKCLAW_STOP_GRACE: "3600" })
      const serve = yield* startServe(t.box.dir, t.env)
      const keptAlive = yield* RawHttp.connect(serve.port)
      yield* keptAlive.write(RawHttp.request("GET", "/v1/health"))
      const silent = yield* RawHttp.connect(serve.port)
      const halfSent = yield* RawHttp.connect(serve.port)
      const body = message("a message whose end never comes")
      yield* halfSent.write(RawHttp.request("POST", "/v1/agents/alice/messages", body).slice(0, -10))
      // A round trip after the others were sent: serve has read them by the time it answers.
      expect(RawHttp.statuses(yield* keptAlive.answers(1))).toEqual([200])
      const again = yield* RawHttp.connect(serve.port)
      yield* again.write(RawHttp.request("GET", "/v1/health"))
      expect(RawHttp.statuses(yield* again.answers(1))).toEqual([200])

      const result = yield* stop(serve.running)
      expect(result.code).toBe(0)
      expect(RawHttp.statuses(yield* keptAlive.closed)).toEqual([200])
      expect(yield* silent.closed).toBe("")
      const cut = yield* halfSent.closed
      expect(RawHttp.statuses(cut)).toEqual([503])
      expect(cut).toMatch(/^connection: close\r$/im)
      // The message never arrived whole: the agent was not even started for it.
      expect(fs.existsSync(path.join(t.agents, "alice"))).toBe(false)
      expect((yield* t.server.turns).length).toBe(0)
    }))

  it.live("answers and stores a turn in flight at SIGTERM, and a request pipelined after the signal gets 503 with Connection: close", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const t = yield* setup((request, index) =>
        index === 0 ? AnthropicServer.gated(gate, AnthropicServer.echo(request, index)) : AnthropicServer.echo(request, index)
      )
      const serve = yield* startServe(t.box.dir, t.env)
      const connection = yield* RawHttp.connect(serve.port)
      yield* connection.write(RawHttp.request("POST", "/v1/agents/alice/messages", message("slow one")))
      yield* within("the turn to reach the brain")(t.server.awaitRequests(1))

      serve.running.process.kill("SIGTERM")
      yield* eventually("serve to say it is stopping", () => (/stopping/.test(serve.stderr()) ? true : undefined))
      // Kept alive by the turn in flight: the next request on it comes after the signal.
      yield* connection.write(RawHttp.request("GET", "/v1/health"))
      yield* Deferred.succeed(gate, undefined)
      const answers = yield* within("both answers and the close")(connection.closed)
      expect(RawHttp.statuses(answers)).toEqual([200, 503])
      const [first, second] = RawHttp.answersIn(answers)
      expect(first).toContain(JSON.stringify({ reply: "re: slow one", stored: true }))
      expect(second).toMatch(/^connection: close\r$/im)
      expect(second).toContain("\"error\":\"stopping\"")
      expect((yield* within("serve to exit")(serve.running.done)).code).toBe(0)
      expect(t.history("alice")).toBe(line("user", "slow one") + line("assistant", "re: slow one"))
    }))

  it.live("cuts a turn that outlasts PLANCKCLAW_STOP_GRACE there, and the next start answers it, also to its Idempotency-Key", () =>
    Effect.gen(function*() {
      const t = yield* setup((request, index) => index === 0 ? AnthropicServer.hang : AnthropicServer.echo(request, index), {
        PLANCKCLAW_STOP_GRACE: "0.5"
      })
      const first = yield* startServe(t.box.dir, t.env)
      const key = { "idempotency-key": "stuck-1" }
      const post = (base: string) => postMessage(base, "alice", "stuck", key)
      const waiting = yield* Effect.forkChild(Effect.result(post(first.base)))
      yield* within("the turn to reach the brain")(t.server.awaitRequests(1))
      expect((yield* stop(first.running)).code).toBe(0)
      // Its connection was closed without an answer; the message stays journaled, unanswered.
      expect((yield* Fiber.join(waiting))._tag).toBe("Failure")
      expect(t.history("alice")).toBe("")

      const second = yield* startServe(t.box.dir, t.env)
      const answered = line("user", "stuck") + line("assistant", "re: stuck")
      yield* eventually("the cut message to be answered", () => (t.history("alice") === answered ? true : undefined))
      expect(yield* post(second.base)).toEqual({ status: 200, body: { reply: "re: stuck", stored: true } })
      expect((yield* t.server.turns).length).toBe(2)
    }))
})
