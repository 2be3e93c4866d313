/**
 * Where catch-up resumes in each channel, moved only past messages held
 * durably. A message handed on to the agent is held once whoever consumes
 * the bridge has it on disk (serve: noted owed; run: the bridge's own note,
 * or the pipe when there is none) and says so; until then the channel's
 * checkpoint stays just before it, so a kill loses nothing the next start
 * would not fetch again. A message not handed on (filtered, a repeat) is
 * passed at once, once everything before it is held.
 */
import * as Effect from "effect/Effect"
import type { CatchUpState } from "./CatchUp.js"
import { isAfter } from "./CatchUp.js"

export interface Checkpoints {
  /** `messageId` in `channel` was handed on: the checkpoint waits for it to be held. */
  readonly handedOn: (channel: string, messageId: string) => Effect.Effect<void>
  /** `messageId` in `channel` was handled without being handed on. */
  readonly passed: (channel: string, messageId: string) => Effect.Effect<void>
  /** `messageId` in `channel`, handed on, is held durably. */
  readonly held: (channel: string, messageId: string) => Effect.Effect<void>
}

interface Progress {
  /** The newest message handled in the channel. */
  newest: string | undefined
  /** Messages handed on and not yet held. */
  readonly waiting: Set<string>
}

const before = (id: string): string => String(BigInt(id) - 1n)

export const make = (state: CatchUpState): Checkpoints => {
  const channels = new Map<string, Progress>()
  const progressOf = (channel: string) => {
    let progress = channels.get(channel)
    if (progress === undefined) channels.set(channel, progress = { newest: undefined, waiting: new Set() })
    return progress
  }
  const handled = (progress: Progress, messageId: string) => {
    if (progress.newest === undefined || isAfter(messageId, progress.newest)) progress.newest = messageId
  }
  /** Records the furthest the channel may resume from: before its oldest message not yet held. */
  const advance = (channel: string, progress: Progress) => {
    let oldest: string | undefined
    for (const id of progress.waiting) if (oldest === undefined || isAfter(oldest, id)) oldest = id
    const to = oldest === undefined ? progress.newest : before(oldest)
    if (oldest === undefined) channels.delete(channel)
    return to === undefined ? Effect.void : state.record(channel, to)
  }
  return {
    handedOn: (channel, messageId) =>
      Effect.sync(() => {
        const progress = progressOf(channel)
        handled(progress, messageId)
        progress.waiting.add(messageId)
      }),
    passed: (channel, messageId) =>
      Effect.suspend(() => {
        const progress = progressOf(channel)
        handled(progress, messageId)
        return advance(channel, progress)
      }),
    held: (channel, messageId) =>
      Effect.suspend(() => {
        const progress = channels.get(channel)
        if (progress === undefined || !progress.waiting.delete(messageId)) return Effect.void
        return advance(channel, progress)
      })
  }
}
