/**
 * A scheduled reply's webhook (ScheduleDelivery), against a receiver on
 * loopback under the TestClock: one that fails is tried again 1, 2 and 4
 * seconds later; one that never answers 2xx is logged without the secret
 * a webhook's URL carries in its path or query (Slack's and Discord's
 * tokens are there); a URL holding a user and password, which fetch refuses
 * to send, is refused when the entry is made; a scheduled message's channel,
 * as log lines name it, shows its webhook so too.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Result } from "effect"
import { shownChannel } from "../../src/runtime/ShownUrl.js"
import * as ScheduleDelivery from "../../src/schedule/ScheduleDelivery.js"
import * as ScheduleEntry from "../../src/schedule/ScheduleEntry.js"
import { captureLogs } from "../support/LogCapture.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import { advanceTo } from "../support/TestClockWait.js"

const SECRET = "T0KEN-not-a-real-one"

/** Delivers `reply` to `to` in a fiber, moving the TestClock through the retries (1, 2, 4 s) as each is pending. */
const deliverThroughRetries = (to: string) =>
  Effect.gen(function*() {
    const logs = yield* captureLogs
    const start = yield* Clock.currentTimeMillis
    const fiber = yield* Effect.forkChild(ScheduleDelivery.deliverTo({ agent: "alice" }, "w1", to, "the build is green").pipe(Effect.provide(logs.layer)))
    for (const at of [1000, 3000, 7000]) yield* advanceTo(start + at)
    yield* Fiber.join(fiber)
    return logs.lines
  })

describe("a scheduled reply's webhook", () => {
  it.effect("a receiver that fails is tried again 1, 2 and 4 seconds later; the reply arrives once", () =>
    Effect.gen(function*() {
      const receiver = yield* LoopbackHttp.serve((_, index) => LoopbackHttp.respond(index < 3 ? 503 : 204, ""), (raw) => JSON.parse(raw) as unknown)
      const lines = yield* deliverThroughRetries(`webhook:http://127.0.0.1:${receiver.port}/hook`)
      const requests = yield* receiver.awaitRequests(4)
      expect(requests.map((request) => request.body)).toEqual(Array(4).fill({ agent: "alice", schedule: "w1", reply: "the build is green" }))
      expect(lines.filter((line) => line.startsWith("ERROR"))).toEqual([])
    }))

  it.effect("a receiver that never answers 2xx is logged by the entry and the receiver's address, never the token in its path or query", () =>
    Effect.gen(function*() {
      const receiver = yield* LoopbackHttp.serve(() => LoopbackHttp.respond(503, ""), (raw) => raw)
      const lines = yield* deliverThroughRetries(`webhook:http://127.0.0.1:${receiver.port}/hooks/${SECRET}?key=${SECRET}#${SECRET}`)
      expect(yield* receiver.awaitRequests(4)).toHaveLength(4)
      expect(lines.filter((line) => line.startsWith("ERROR"))).toEqual([
        `ERROR schedule w1: could not deliver its reply to webhook:http://127.0.0.1:${receiver.port}/…: the receiver answered HTTP 503`
      ])
      expect(lines.join("\n")).not.toContain(SECRET)
    }))

  it.effect("a receiver nobody listens at is logged without the token either (the HTTP client's error quotes the URL whole)", () =>
    Effect.gen(function*() {
      // A port just closed: the connection is refused.
      const port = yield* Effect.scoped(Effect.map(LoopbackHttp.serve(() => LoopbackHttp.respond(204, ""), (raw) => raw), (closed) => closed.port))
      const lines = yield* deliverThroughRetries(`webhook:http://127.0.0.1:${port}/hooks/${SECRET}?key=${SECRET}`)
      expect(lines.filter((line) => line.startsWith("ERROR"))).toEqual([
        expect.stringMatching(new RegExp(`^ERROR schedule w1: could not deliver its reply to webhook:http://127\\.0\\.0\\.1:${port}/…: Transport error`))
      ])
      expect(lines.join("\n")).not.toContain(SECRET)
    }))

  it("a webhook URL with a user and password is refused with the reason, the password not repeated", () => {
    const refused = ScheduleEntry.parseDestination(`webhook:https://bot:${SECRET}@example.com/hook`)
    expect(Result.isFailure(refused) && refused.failure).toBe(
      "a webhook URL cannot hold a user and password (user:password@), as HTTP clients refuse to send it: put the token in its path or query"
    )
  })

  it("a scheduled message's channel, as log lines name it, shows its webhook's scheme and host only; other channels as they are", () => {
    expect(shownChannel(`schedule/w1/webhook:https://hooks.slack.com/services/${SECRET}?key=${SECRET}`)).toBe("schedule/w1/webhook:https://hooks.slack.com/…")
    expect(shownChannel("schedule/w1/webhook:http://127.0.0.1:8080")).toBe("schedule/w1/webhook:http://127.0.0.1:8080/")
    for (const plain of ["cli", "discord:123456789012345678", "schedule/t1/terminal", "schedule/d1/discord:123"]) expect(shownChannel(plain)).toBe(plain)
    expect(ScheduleDelivery.shownWebhook(`https://discord.com/api/webhooks/1/${SECRET}`)).toBe("https://discord.com/…")
  })
})
