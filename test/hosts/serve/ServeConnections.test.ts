/**
 * The built `planckclaw serve` holds its connections to limits: at most
 * PLANCKCLAW_MAX_CONNECTIONS (the next few answered 503, the rest refused),
 * each given PLANCKCLAW_HTTP_REQUEST_TIMEOUT to send its request and
 * PLANCKCLAW_HTTP_IDLE_TIMEOUT kept alive, and a reserve of descriptors
 * under `ulimit -n` that a flood of connections cannot take from the
 * agents' memory files. Real sockets on loopback; the timeouts are set
 * small and only their effect is asserted, never how long anything took.
 */
import { describe, expect, it } from "@effect/vitest"
import { Data, Deferred, Effect, Fiber, Schedule } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import { line } from "../../support/Harness.js"
import * as RawHttp from "../../support/RawHttp.js"
import { eventually, within } from "../../support/Sandbox.js"
import { postMessage, setup, startServe } from "../../support/ServeKit.js"

class OverTheCap extends Data.TaggedError("OverTheCap") {}

/** A message's POST, tried again while it lands on a connection over the cap (the slots freed may not be counted yet). */
const postOnceRoom = (base: string, id: string, text: string) =>
  postMessage(base, id, text).pipe(
    Effect.filterOrFail((answer) => answer.body["error"] !== "too-many-connections", () => new OverTheCap()),
    Effect.retry({ while: (error) => error._tag === "OverTheCap", schedule: Schedule.spaced("50 millis") }),
    within(`a message to ${id} to find room`)
  )

/** `count` connections that have each had an answer: accepted and counted by serve, idle now. */
const openIdle = (port: number, count: number) =>
  Effect.forEach(Array.from({ length: count }), () =>
    Effect.gen(function*() {
      const connection = yield* RawHttp.connect(port)
      yield* connection.write(RawHttp.request("GET", "/v1/health"))
      return { connection, answer: yield* within("an answer")(connection.answers(1)) }
    }))

describe("planckclaw serve's connections (built command)", () => {
  it.live("answers 503 over PLANCKCLAW_MAX_CONNECTIONS, refuses a flood beyond, and answers again once they close", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.echo, {
        PLANCKCLAW_MAX_CONNECTIONS: "8",
        // Nothing closes by itself during the test.
        PLANCKCLAW_HTTP_IDLE_TIMEOUT: "3600",
        PLANCKCLAW_HTTP_REQUEST_TIMEOUT: "3600"
      })
      const serve = yield* startServe(t.box.dir, t.env)
      const held = yield* openIdle(serve.port, 8)
      expect(held.map(({ answer }) => RawHttp.statuses(answer))).toEqual(Array.from({ length: 8 }, () => [200]))

      const ninth = yield* RawHttp.connect(serve.port)
      yield* ninth.write(RawHttp.request("GET", "/v1/agents"))
      const refusal = yield* within("the ninth to be answered and closed")(ninth.closed)
      expect(RawHttp.statuses(refusal)).toEqual([503])
      expect(refusal).toMatch(/^connection: close\r$/im)
      expect(refusal).toContain("\"error\":\"too-many-connections\"")
      yield* eventually("the cap's warning", () => serve.stderr().includes("8 connections are open (PLANCKCLAW_MAX_CONNECTIONS)") || undefined)

      // A flood, each asking: those taken while 16 or fewer are over the cap are answered 503, the others
      // closed at once without a byte (how many of each depends on when serve takes them); none is served.
      const flood = yield* Effect.forEach(Array.from({ length: 60 }), () => RawHttp.connect(serve.port))
      for (const connection of flood) yield* connection.write(RawHttp.request("GET", "/v1/agents"))
      const received = yield* Effect.forEach(flood, (connection) => within("the flood to be answered or refused")(connection.closed))
      const answered = received.filter((text) => text !== "")
      // How many are closed without a byte depends on the machine's pace: serve may answer and close each
      // before the next arrives (so all 60 read 503), or take many at once (some closed unanswered).
      expect(answered.length).toBeGreaterThan(0)
      for (const text of answered) {
        expect(RawHttp.statuses(text)).toEqual([503])
        expect(text).toContain("\"error\":\"too-many-connections\"")
      }

      for (const { connection } of held) yield* connection.close
      expect(yield* postOnceRoom(serve.base, "alice", "hello")).toEqual({ status: 200, body: { reply: "re: hello", stored: true } })
    }))

  it.live("closes a connection that does not send its whole request in time (408), and a kept-alive one left idle; a long turn is not cut", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const t = yield* setup((request, index) => index === 0 ? AnthropicServer.gated(gate, AnthropicServer.echo(request, index)) : AnthropicServer.echo(request, index), {
        PLANCKCLAW_HTTP_REQUEST_TIMEOUT: "0.3",
        PLANCKCLAW_HTTP_IDLE_TIMEOUT: "0.3"
      })
      const serve = yield* startServe(t.box.dir, t.env)
      // A turn held at the brain, its request long since received.
      const turn = yield* Effect.forkChild(postMessage(serve.base, "alice", "take your time"))
      yield* within("the turn to reach the brain")(t.server.awaitRequests(1))

      const silent = yield* RawHttp.connect(serve.port)
      const halfHeaders = yield* RawHttp.connect(serve.port)
      yield* halfHeaders.write("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
      const halfBody = yield* RawHttp.connect(serve.port)
      yield* halfBody.write(RawHttp.request("POST", "/v1/agents/bob/messages", JSON.stringify({ text: "never finished" })).slice(0, -5))
      for (const slow of [silent, halfHeaders, halfBody]) {
        const text = yield* within("a slow connection to be timed out")(slow.closed)
        expect(RawHttp.statuses(text)).toEqual([408])
        expect(text).toContain("{\"error\":\"request-timeout\",\"message\":\"the request was not sent whole within 0.3 s (PLANCKCLAW_HTTP_REQUEST_TIMEOUT)\"}")
      }
      const keptAlive = yield* RawHttp.connect(serve.port)
      yield* keptAlive.write(RawHttp.request("GET", "/v1/health"))
      expect(RawHttp.statuses(yield* within("an idle kept-alive connection to be closed")(keptAlive.closed))).toEqual([200])

      // The turn outlived every timeout above: it is answered all the same.
      yield* Deferred.succeed(gate, undefined)
      expect(yield* within("the held turn's answer")(Fiber.join(turn))).toEqual({
        status: 200,
        body: { reply: "re: take your time", stored: true }
      })
      expect(t.history("bob")).toBe("")
      expect(t.history("alice")).toBe(line("user", "take your time") + line("assistant", "re: take your time"))
    }))

  it.live("refuses at start a cap, or settings, that leave no descriptors in reserve under ulimit -n, saying what may be set", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.echo)
      const serve = (extra: Record<string, string>, openFileLimit: number) =>
        Effect.scoped(Effect.flatMap(
          Cli.start(["serve", "--http", "127.0.0.1:0"], { cwd: t.box.dir, env: { ...t.env, ...extra }, openFileLimit }),
          (running) => within("serve to refuse its settings")(running.done)
        ))
      // The reserve by default: 80 + 4 × 128 agents' files + 4 × 16 turns = 656.
      const tooMany = yield* serve({ PLANCKCLAW_MAX_CONNECTIONS: "1000" }, 1024)
      expect(tooMany.code).toBe(2)
      expect(tooMany.stderr).toMatch(
        /^planckclaw: configuration error: PLANCKCLAW_MAX_CONNECTIONS: 1000 connections would eat into the descriptors kept in reserve: the open-file limit \(ulimit -n\) is 1024 and 656 descriptors are kept in reserve.*; set at most 368, or raise ulimit -n\n$/
      )
      const none = yield* serve({}, 256)
      expect(none.code).toBe(2)
      expect(none.stderr).toContain("serve would have no descriptors left for connections: the open-file limit (ulimit -n) is 256")
      expect(none.stderr).toContain("raise ulimit -n, or lower PLANCKCLAW_AGENTS_HOLDING_FILES or PLANCKCLAW_MAX_CONCURRENT_TURNS")
    }))

  it.live("with ulimit -n low, a flood of connections leaves a new agent the descriptors for its memory files", () =>
    Effect.gen(function*() {
      // Reserve 80 + 3 × 8 + 4 × 2 = 112 of 256: the cap is 144.
      const t = yield* setup(AnthropicServer.echo, {
        PLANCKCLAW_AGENTS_HOLDING_FILES: "8",
        PLANCKCLAW_MAX_CONCURRENT_TURNS: "2",
        PLANCKCLAW_HTTP_IDLE_TIMEOUT: "3600"
      })
      const serve = yield* startServe(t.box.dir, t.env, { openFileLimit: 256 })
      // A client's connection, kept alive from before the flood.
      const client = (yield* openIdle(serve.port, 1))[0]!.connection
      const flood = yield* Effect.forEach(Array.from({ length: 300 }), () => RawHttp.connect(serve.port))
      // At least the flood's excess over ulimit -n turned away: serve holds all of it that it ever will.
      yield* eventually("serve to turn away part of the flood", () =>
        flood.filter((connection) => Effect.runSync(connection.isClosed)).length >= 300 - 256 ? true : undefined)
      // With the flood holding every connection it may, a new agent still opens its memory files.
      yield* client.write(RawHttp.request("POST", "/v1/agents/bob/messages", JSON.stringify({ text: "still there?" })))
      const answers = RawHttp.answersIn(yield* within("bob's answer")(client.answers(2)))
      expect(RawHttp.statuses(answers[1]!)).toEqual([200])
      expect(answers[1]).toContain(JSON.stringify({ reply: "re: still there?", stored: true }))
      expect(t.history("bob")).toBe(line("user", "still there?") + line("assistant", "re: still there?"))
      expect(serve.stderr()).not.toContain("EMFILE")
    }))
})
