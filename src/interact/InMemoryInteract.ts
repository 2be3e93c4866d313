/**
 * An in-memory Interact for tests and for embedding: the host offers
 * messages and takes replies from a queue.
 */
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Pull from "effect/Pull"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { type InboundMessage, Interact, type InteractService, type OutboundMessage } from "../Interact.js"
import * as Wakeups from "../Wakeups.js"

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
  // Messages waiting for a taker, and takers waiting for a message: a plain
  // array and resumes, since a Queue and a three-stage stream over it cost
  // more per message than the rest of the in-memory path.
  const waiting: Array<Item> = []
  // Takers are woken, not handed the message (see Wakeups): one interrupted meanwhile leaves it for the next.
  const takers = Wakeups.make()
  const put = (item: Item) =>
    Effect.sync(() => {
      waiting.push(item)
      takers.wakeAll()
    })
  // One message per pull: a consumer that stops early must not take buffered messages with it.
  const take: MessagePull = Effect.suspend(() => {
    const first = waiting.shift()
    if (first !== undefined) return deliver(first)
    return takers.wait(take)
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
