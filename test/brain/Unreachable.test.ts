/**
 * A brain server that cannot be reached (nothing listening, an unknown host)
 * is named in one line with its address, not reported as a timeout. Under
 * GiveUpWhenUnreachable (as `run` sets it) that line comes within 2 s of
 * TestClock time; without it (serve) the schedule's retries go on, and a
 * server that comes up meanwhile answers.
 *
 * The unknown host is a name under .invalid (reserved, RFC 6761) whose first
 * label is longer than DNS allows (63 bytes): the resolver refuses it without
 * sending a query, so the test reaches no network (checked with strace on
 * this machine: a plain nonexistent.invalid is sent to the DNS server).
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Exit, Fiber, Option, Redacted } from "effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import { TestClock } from "effect/testing"
import type { BrainService, MessagesRequest } from "../../src/ports/Brain.js"
import * as Anthropic from "../../src/brain/AnthropicBrain.js"
import * as OpenAi from "../../src/brain/OpenAiBrain.js"
import * as Unreachable from "../../src/brain/Unreachable.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import { withPinnedJitter } from "../support/TestClockHttp.js"
import { advanceTo, awaitPendingSleep, pendingSleeps, yieldToEventLoop } from "../support/TestClockWait.js"

const request: MessagesRequest = { model: "m", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }
const common = { timeout: Duration.seconds(60), retries: 3, debug: false }
const unknownHost = `http://${"a".repeat(70)}.invalid`

const anthropicAt = (baseUrl: string) => Anthropic.make({ ...common, apiKey: Redacted.make("test-key-not-secret"), baseUrl })
const openAiAt = (baseUrl: string) => OpenAi.make({ ...common, apiKey: Option.none(), baseUrl: `${baseUrl}/v1` })

/**
 * Waits for the fiber to end, moving the TestClock only to sleeps that end
 * by `limitMillis` (a backoff within the bound): a brain that would wait
 * longer never ends here, and the real-time watchdog fails the test. Sleeps
 * past the bound (an attempt's own timeout) stay pending while real I/O runs.
 */
const settledBy = <A, E>(fiber: Fiber.Fiber<A, E>, limitMillis: number) =>
  Effect.gen(function*() {
    while (fiber.pollUnsafe() === undefined) {
      const due = (yield* pendingSleeps).filter((at) => at <= limitMillis)
      if (due.length > 0) yield* TestClock.adjust(Duration.millis(Math.min(...due) - (yield* Clock.currentTimeMillis)))
      yield* yieldToEventLoop
    }
    return { exit: yield* Fiber.await(fiber), at: yield* Clock.currentTimeMillis }
  }).pipe(Effect.raceFirst(
    TestClock.withLive(Effect.sleep("10 seconds")).pipe(
      Effect.andThen(pendingSleeps),
      Effect.flatMap((pending) => Effect.die(new Error(`no answer within ${limitMillis} ms; pending sleeps: ${pending.join(", ")}`)))
    )
  ))

const failureOf = <A>(exit: Exit.Exit<A, unknown>) => {
  if (Exit.isSuccess(exit)) throw new Error("the brain answered")
  const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  return (error as { readonly error: { readonly reason: string; readonly detail: string; readonly misconfigured?: unknown } }).error
}

const givingUp = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Unreachable.GiveUpWhenUnreachable, true)

describe("a brain that cannot be reached, in a run", () => {
  const cases: ReadonlyArray<readonly [string, (url: string) => Effect.Effect<BrainService, never, any>, string, string]> = [
    ["Anthropic", anthropicAt, "", "ANTHROPIC_BASE_URL"],
    ["OpenAI-compatible", openAiAt, "/v1", "OPENAI_BASE_URL"]
  ]
  for (const [name, make, path, setting] of cases) {
    it.effect(`${name}: a refused connection is named with its URL within 2 s, as fatal, not a timeout`, () =>
      Effect.gen(function*() {
        const url = yield* LoopbackHttp.unusedUrl
        const brain = yield* make(url)
        const fiber = yield* Effect.forkChild(givingUp(brain.complete(request)))
        const { at, exit } = yield* settledBy(fiber, 2_000)
        expect(at).toBeLessThanOrEqual(2_000)
        const error = failureOf(exit)
        expect(error.reason).toBe("fatal")
        expect(error.detail).toBe(`nothing is listening at ${url}${path}: is the model server running?`)
        expect(error.misconfigured).toEqual({ problem: "nothing is listening at the model server's address: is it running?", setting })
      }).pipe(withPinnedJitter, Effect.provide(FetchHttpClient.layer)))

    it.effect(`${name}: an unknown host is named within 2 s`, () =>
      Effect.gen(function*() {
        const brain = yield* make(unknownHost)
        const fiber = yield* Effect.forkChild(givingUp(brain.complete(request)))
        const { at, exit } = yield* settledBy(fiber, 2_000)
        expect(at).toBeLessThanOrEqual(2_000)
        const error = failureOf(exit)
        expect(error.reason).toBe("fatal")
        expect(error.detail).toBe(`the host ${"a".repeat(70)}.invalid of ${unknownHost}${path} is not found: check ${setting}`)
      }).pipe(withPinnedJitter, Effect.provide(FetchHttpClient.layer)))
  }
})

describe("a brain that cannot be reached, in serve", () => {
  it.effect("keeps retrying on its schedule, and answers once the server listens", () =>
    Effect.gen(function*() {
      const port = yield* LoopbackHttp.unusedPort
      const brain = yield* anthropicAt(`http://127.0.0.1:${port}`)
      const fiber = yield* Effect.forkChild(brain.complete(request))
      // Two attempts refused: the schedule waits 1 s, then 2 s, and the call is not over.
      yield* advanceTo(1_000)
      yield* awaitPendingSleep(3_000)
      expect(fiber.pollUnsafe()).toBeUndefined()
      // The server comes up on that very port: the next attempt is answered.
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("Back again.")), port)
      yield* advanceTo(3_000)
      expect((yield* Fiber.join(fiber)).content).toEqual([{ type: "text", text: "Back again." }])
      expect(yield* server.requests).toHaveLength(1)
    }).pipe(withPinnedJitter, Effect.provide(FetchHttpClient.layer)))

  it.effect("when the retries are spent, says what the last attempt met: nothing listening at the URL", () =>
    Effect.gen(function*() {
      const url = yield* LoopbackHttp.unusedUrl
      const brain = yield* openAiAt(url)
      const fiber = yield* Effect.forkChild(brain.complete(request))
      for (const at of [1_000, 3_000, 7_000]) yield* advanceTo(at)
      const error = failureOf(yield* Fiber.await(fiber))
      expect(error.reason).toBe("timeout")
      expect(error.detail).toBe(`gave up after 4 attempts: nothing is listening at ${url}/v1: is the model server running?`)
    }).pipe(withPinnedJitter, Effect.provide(FetchHttpClient.layer)))
})
