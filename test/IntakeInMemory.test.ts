/**
 * The in-memory interact's direct pull, which Intake reads instead of the
 * message stream when the adapter is the in-memory one: the same messages,
 * one per pull, in order, and the same end (a failure with Cause.Done).
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Stream } from "effect"
import * as DirectPull from "../src/interact/DirectPull.js"
import * as InMemoryInteract from "../src/interact/InMemoryInteract.js"

describe("DirectPull.directPull of the in-memory adapter", () => {
  it.effect("pulls one message at a time, in order, waits for the next, and ends with Done", () =>
    Effect.gen(function*() {
      const handle = yield* InMemoryInteract.make
      const pull = DirectPull.directPull(handle.service.messages)
      if (pull === undefined) return expect.unreachable("an in-memory stream has a direct pull")
      yield* handle.offer({ channel: "a", text: "one" })
      yield* handle.offer({ channel: "a", text: "two" })
      expect(yield* pull).toEqual([{ channel: "a", text: "one" }])
      expect(yield* pull).toEqual([{ channel: "a", text: "two" }])
      const waiting = yield* Effect.forkChild(pull)
      yield* handle.offer({ channel: "b", text: "three" })
      expect(yield* Fiber.join(waiting)).toEqual([{ channel: "b", text: "three" }])
      yield* handle.end
      expect(yield* Effect.exit(pull)).toEqual(Exit.fail(Cause.Done()))
    }))

  it.effect("is absent for any other stream, which Intake then reads as a stream", () =>
    Effect.sync(() => {
      expect(DirectPull.directPull(Stream.make({ channel: "a", text: "x" }))).toBeUndefined()
    }))
})
