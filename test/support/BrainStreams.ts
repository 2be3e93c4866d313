/**
 * A brain's stream as the brain tests read it: run in the background with
 * each event queued as it arrives, and the text deltas and the final answer
 * picked out of the events.
 */
import { Effect, Queue, Stream } from "effect"
import type { BrainEvent, BrainService, MessagesRequest, MessagesResponse } from "../../src/ports/Brain.js"

/** Streams `request` from the brain `made` in the background, every event into a queue as it arrives. */
export const startStream = <E, R>(made: Effect.Effect<BrainService, E, R>, request: MessagesRequest) =>
  Effect.gen(function*() {
    const brain = yield* made
    const arrived = yield* Queue.unbounded<BrainEvent>()
    const fiber = yield* Effect.forkChild(Stream.runForEach(brain.stream!(request), (event) => Queue.offer(arrived, event)))
    return { arrived, fiber }
  })

/** The answer a stream ended with; a stream that ended otherwise fails the test. */
export const answerOf = (all: ReadonlyArray<BrainEvent>): MessagesResponse => {
  const last = all.at(-1)
  if (last?._tag !== "Answer") throw new Error(`the stream did not end in its answer: ${JSON.stringify(last)}`)
  return last.response
}

/** The text deltas of a stream, in order. */
export const deltas = (all: ReadonlyArray<BrainEvent>) => all.flatMap((event) => event._tag === "TextDelta" ? [event.text] : [])
