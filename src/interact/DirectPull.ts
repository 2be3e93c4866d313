/**
 * A message stream's own pull, for a reader that can skip the stream
 * (Intake): an adapter that makes its `messages` from one pull effect
 * registers it here. Reading it directly skips the stream's channel
 * machinery on every message, which costs more than the rest of the
 * message's way to the agent.
 */
import type * as Chunk from "effect/Chunk"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import type { InboundMessage } from "../Interact.js"

type Pull<E> = Effect.Effect<Chunk.Chunk<InboundMessage>, Option.Option<E>>

const pulls = new WeakMap<Stream.Stream<InboundMessage, unknown>, Pull<unknown>>()

/**
 * Records that `messages` is `Stream.repeatEffectChunkOption(pull)`: one
 * pull gives what the stream's next pull would (the same chunk, the same
 * end with None, the same failure with Some).
 */
export const register = <E>(messages: Stream.Stream<InboundMessage, E>, pull: Pull<E>): void => {
  pulls.set(messages, pull as Pull<unknown>)
}

/** The pull registered for `messages`, or undefined for any other stream. */
export const directPull = <E>(messages: Stream.Stream<InboundMessage, E>): Pull<E> | undefined =>
  pulls.get(messages) as Pull<E> | undefined
