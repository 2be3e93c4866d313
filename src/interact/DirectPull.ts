/**
 * A message stream's own pull, for a reader that can skip the stream
 * (Intake): an adapter that makes its `messages` from one pull effect
 * registers it here. Reading it directly skips the stream's channel
 * machinery on every message, which costs more than the rest of the
 * message's way to the agent.
 */
import type * as Arr from "effect/Array"
import type * as Pull from "effect/Pull"
import type * as Stream from "effect/Stream"
import type { InboundMessage } from "../Interact.js"

/** What `Stream.toPull` gives: the next messages, or a failure with `Cause.Done` at the end. */
export type MessagePull<E> = Pull.Pull<Arr.NonEmptyReadonlyArray<InboundMessage>, E>

const pulls = new WeakMap<Stream.Stream<InboundMessage, unknown>, MessagePull<unknown>>()

/**
 * Records that `messages` is `Stream.fromPull(Effect.succeed(pull))`: one
 * pull gives what the stream's next pull would (the same messages, the same
 * end with `Cause.Done`, the same failure), as one from `Stream.toPull` does.
 */
export const register = <E>(messages: Stream.Stream<InboundMessage, E>, pull: MessagePull<E>): void => {
  pulls.set(messages, pull as MessagePull<unknown>)
}

/** The pull registered for `messages`, or undefined for any other stream. */
export const directPull = <E>(messages: Stream.Stream<InboundMessage, E>): MessagePull<E> | undefined =>
  pulls.get(messages) as MessagePull<E> | undefined
