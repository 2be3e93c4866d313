/**
 * An in-memory Interact for tests and for embedding: the host offers
 * messages and takes replies from a queue.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { type InboundMessage, Interact, type InteractService, type OutboundMessage } from "../Interact.js"

export interface InMemoryInteract {
  readonly service: InteractService
  /** Queue a user message for the agent. */
  readonly offer: (message: InboundMessage) => Effect.Effect<void>
  /** Signal that no more messages will come: the agent's stream ends. */
  readonly end: Effect.Effect<void>
  /** Replies the agent sent, in order. */
  readonly replies: Queue.Dequeue<OutboundMessage>
}

export const make: Effect.Effect<InMemoryInteract> = Effect.gen(function*() {
  const inbound = yield* Queue.unbounded<Option.Option<InboundMessage>>()
  const replies = yield* Queue.unbounded<OutboundMessage>()
  const service: InteractService = {
    // One at a time: a consumer that stops early must not take buffered messages with it.
    messages: Stream.fromQueue(inbound, { maxChunkSize: 1 }).pipe(
      Stream.takeWhile(Option.isSome),
      Stream.map((message) => message.value)
    ),
    send: (message) => Queue.offer(replies, message)
  }
  return {
    service,
    offer: (message) => Queue.offer(inbound, Option.some(message)),
    end: Queue.offer(inbound, Option.none()),
    replies
  }
})

export const layer = (handle: InMemoryInteract): Layer.Layer<Interact> => Layer.succeed(Interact, handle.service)
