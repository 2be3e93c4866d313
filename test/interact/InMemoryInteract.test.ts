/**
 * The in-memory Interact's message stream: in order, one message per pull
 * (a consumer that stops early leaves the rest for the next), `end` ends it,
 * and a taker that gave up waiting takes nothing with it.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"

const message = (text: string) => ({ channel: "test", text })
const texts = <E>(stream: Stream.Stream<{ readonly text: string }, E>) =>
  Effect.map(Stream.runCollect(stream), (messages) => messages.map((m) => m.text))

it.effect("serves offered messages in order and ends at `end`", () =>
  Effect.gen(function*() {
    const interact = yield* InMemoryInteract.make
    yield* interact.offer(message("a"))
    yield* interact.offer(message("b"))
    yield* interact.end
    expect(yield* texts(interact.service.messages)).toEqual(["a", "b"])
  }))

it.effect("a consumer that stops early leaves the buffered messages to the next one", () =>
  Effect.gen(function*() {
    const interact = yield* InMemoryInteract.make
    for (const text of ["a", "b", "c"]) yield* interact.offer(message(text))
    yield* interact.end
    expect(yield* texts(Stream.take(interact.service.messages, 1))).toEqual(["a"])
    expect(yield* texts(interact.service.messages)).toEqual(["b", "c"])
  }))

it.effect("a waiting consumer gets messages offered later, and `end` ends it", () =>
  Effect.gen(function*() {
    const interact = yield* InMemoryInteract.make
    const reader = yield* Effect.forkChild(texts(interact.service.messages))
    yield* Effect.yieldNow
    yield* interact.offer(message("a"))
    yield* Effect.yieldNow
    yield* interact.offer(message("b"))
    yield* interact.end
    expect(yield* Fiber.join(reader)).toEqual(["a", "b"])
  }))

it.effect("a consumer interrupted while waiting takes nothing offered afterwards", () =>
  Effect.gen(function*() {
    const interact = yield* InMemoryInteract.make
    const gaveUp = yield* Effect.forkChild(texts(interact.service.messages))
    yield* Effect.yieldNow
    yield* Fiber.interrupt(gaveUp)
    yield* interact.offer(message("a"))
    yield* interact.end
    expect(yield* texts(interact.service.messages)).toEqual(["a"])
  }))

// Effect 4 runs a fiber woken from a callback at once, on the waker's stack: a
// woken pull has taken its message before an interruption in the same step
// can reach it. Either order loses nothing.
it.effect("a pull woken by a message in the same step as it is interrupted has the message: nothing is lost", () =>
  Effect.gen(function*() {
    const interact = yield* InMemoryInteract.make
    // The stream's pull, one at a time, as Intake takes messages.
    const pull = yield* Stream.toPull(interact.service.messages)
    const woken = yield* Effect.forkChild(pull)
    yield* Effect.yieldNow
    // In one step: the message arrives (waking the consumer) and the consumer is interrupted.
    yield* Effect.sync(() => {
      Effect.runSync(interact.offer(message("a")))
      woken.interruptUnsafe(woken.id)
    })
    expect(yield* Fiber.await(woken)).toEqual(Exit.succeed([message("a")]))
    yield* interact.end
    expect(yield* texts(interact.service.messages)).toEqual([])
  }))

it.effect("a pull interrupted in the same step as a message arrives, before it, leaves the message to the next", () =>
  Effect.gen(function*() {
    const interact = yield* InMemoryInteract.make
    const pull = yield* Stream.toPull(interact.service.messages)
    const gaveUp = yield* Effect.forkChild(pull)
    yield* Effect.yieldNow
    yield* Effect.sync(() => {
      gaveUp.interruptUnsafe(gaveUp.id)
      Effect.runSync(interact.offer(message("a")))
    })
    expect(Exit.hasInterrupts(yield* Fiber.await(gaveUp))).toBe(true)
    yield* interact.end
    expect(yield* texts(interact.service.messages)).toEqual(["a"])
  }))

it.effect("replies are kept in order for the host", () =>
  Effect.gen(function*() {
    const interact = yield* InMemoryInteract.make
    yield* interact.service.send({ channel: "test", text: "one" })
    yield* interact.service.send({ channel: "test", text: "two" })
    expect((yield* Queue.takeAll(interact.replies)).map((m) => m.text)).toEqual(["one", "two"])
  }))
