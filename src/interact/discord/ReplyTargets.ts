/**
 * What a reply answers, per channel: the inbound side records the question
 * (a message, or a slash-command interaction) when it hands a message to the
 * agent; the outbound side takes the oldest one when the agent's reply for
 * that channel arrives. The agent answers a channel's messages in order, so
 * a first-in first-out queue per channel pairs them. A reply with no recorded
 * question (one answered after a restart) is sent as a plain message.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** The question a reply answers. */
export type ReplyTarget =
  | { readonly _tag: "Message"; readonly messageId: string }
  | {
    readonly _tag: "Interaction"
    readonly applicationId: string
    readonly interactionId: string
    readonly token: string
  }

export interface ReplyTargets {
  /** Records the question of the next message handed to the agent for `channel`. */
  readonly expect: (channel: string, target: ReplyTarget) => Effect.Effect<void>
  /** The oldest question of `channel` not yet answered, removed. */
  readonly take: (channel: string) => Effect.Effect<Option.Option<ReplyTarget>>
}

/** Questions kept per channel at most: an agent that never answers cannot grow this without bound. */
const keptPerChannel = 1000

export const make: Effect.Effect<ReplyTargets> = Effect.sync(() => {
  const waiting = new Map<string, Array<ReplyTarget>>()
  return {
    expect: (channel, target) =>
      Effect.sync(() => {
        const queue = waiting.get(channel) ?? []
        queue.push(target)
        if (queue.length > keptPerChannel) queue.shift()
        waiting.set(channel, queue)
      }),
    take: (channel) =>
      Effect.sync(() => {
        const queue = waiting.get(channel)
        const next = queue?.shift()
        if (queue !== undefined && queue.length === 0) waiting.delete(channel)
        return Option.fromNullishOr(next)
      })
  }
})
