/**
 * An in-memory Interact for tests and for embedding: the host offers
 * messages and takes replies from a queue.
 */
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Latch from "effect/Latch"
import type * as Pull from "effect/Pull"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { type InboundMessage, Interact, type InteractService, type OutboundMessage } from "../ports/Interact.js"

export interface InMemoryInteract {
  readonly service: InteractService
  /** Queue a user message for the agent. */
  readonly offer: (message: InboundMessage) => Effect.Effect<void>
  /** Signal that no more messages will come: the agent's stream ends. */
  readonly end: Effect.Effect<void>
  /** Replies the agent sent, in order. */
  readonly replies: Queue.Dequeue<OutboundMessage>
}

/** What `end` puts in line: the stream that takes it ends there. */
const END = Symbol("end")
type Item = Arr.NonEmptyReadonlyArray<InboundMessage> | typeof END

/** One pull of the message stream: the next message, or its end (`Cause.Done`). */
type MessagePull = Pull.Pull<Arr.NonEmptyReadonlyArray<InboundMessage>>

const endOfStream: Effect.Effect<never, Cause.Done> = Cause.done()
const deliver = (item: Item): MessagePull => item === END ? endOfStream : Effect.succeed(item)

export const make: Effect.Effect<InMemoryInteract> = Effect.gen(function*() {
  // Messages waiting for a taker, pulled one at a time. A taker finding
  // none closes the latch and waits for a `put` to open it, then looks
  // again: woken, not handed the message, so one interrupted meanwhile
  // leaves it for the next. A `put` resumes a taker at once (a Queue's
  // taker would run on the scheduler's next tick).
  const waiting: Array<Item> = []
  const arrived = Latch.makeUnsafe(false)
  const put = (item: Item) =>
    Effect.sync(() => {
      waiting.push(item)
      arrived.openUnsafe()
    })
  // One message per pull: a consumer that stops early must not take buffered messages with it.
  const take: MessagePull = Effect.suspend(() => {
    const first = waiting.shift()
    if (first !== undefined) return deliver(first)
    arrived.closeUnsafe()
    return Effect.andThen(arrived.await, take)
  })
  const replies = yield* Queue.unbounded<OutboundMessage>()
  const messages = Stream.fromPull(Effect.succeed(take))
  const service: InteractService = {
    messages,
    send: (message) => Queue.offer(replies, message)
  }
  return {
    service,
    offer: (message) => put([message]),
    end: put(END),
    replies
  }
})

export const layer = (handle: InMemoryInteract): Layer.Layer<Interact> => Layer.succeed(Interact, handle.service)
