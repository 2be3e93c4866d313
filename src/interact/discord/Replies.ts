/**
 * Replies out: a REST client of their own (@discordjs/rest, which waits out
 * 429s as Retry-After says), so they are delivered while the gateway
 * reconnects. 5xx and network failures are retried on an explicit Schedule;
 * each part carries a nonce Discord uses to drop duplicates.
 */
import { randomBytes } from "node:crypto"
import { REST, Routes } from "discord.js"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { InteractError, type OutboundMessage } from "../../Interact.js"
import { isDiscordId } from "./Settings.js"
import { describeRestError, isPermanent } from "./Refusals.js"
import { chunkReply } from "./ReplyChunks.js"
import type { TypingIndicator } from "./Typing.js"

/** A POST to a Discord REST route; fails with whatever @discordjs/rest threw. */
export type RestPost = (route: `/${string}`, body?: unknown) => Effect.Effect<unknown, unknown>

/** A failed part of a reply (5xx, network, timeout): about two minutes of retries, then give up. */
const sendRetry = Schedule.exponential("1 second").pipe(
  Schedule.jittered,
  Schedule.modifyDelay((_, delay) => Duration.min(delay, Duration.seconds(30))),
  Schedule.intersect(Schedule.recurs(7))
)

/** Longest one part of a reply may take, rate limits included. */
const partDeadline = Duration.minutes(3)

/** A 429 asking for a longer wait than this fails the part at once instead of sleeping. */
const longestRateLimitWait = Duration.minutes(1)

/**
 * discord.js waits out a 429 as its Retry-After header says. Without the
 * header it would retry at once, again and again; and a very long wait would
 * outlast the part's deadline. Both are turned into errors: the first is
 * retried on our schedule, the second fails the part.
 */
const rejectRateLimit = (limit: { readonly retryAfter: number }): boolean =>
  limit.retryAfter <= 0 || limit.retryAfter > Duration.toMillis(longestRateLimitWait)

/** A REST client for replies and the typing indicator; its sweeper timers stop with the scope. */
export const makeRestPost = (apiUrl: string, token: string): Effect.Effect<RestPost, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() =>
      new REST({ api: apiUrl, version: "10", retries: 0, timeout: 15_000, rejectOnRateLimit: rejectRateLimit })
        .setToken(token)
    ),
    (rest) =>
      Effect.sync(() => {
        rest.clearHashSweeper()
        rest.clearHandlerSweeper()
      })
  ).pipe(
    Effect.map((rest): RestPost => (route, body) =>
      Effect.tryPromise({ try: (signal) => rest.post(route, { body, signal }), catch: (cause) => cause })
    )
  )

/** Shows "typing…" in a channel for ten seconds, or until the bot posts there. */
export const showTyping = (post: RestPost) => (channel: string): Effect.Effect<unknown, unknown> =>
  post(Routes.channelTyping(channel))

/** Posts one part of a reply, retrying what may pass later; fails with why it could not. */
const postPart = (post: RestPost, channel: string, content: string): Effect.Effect<void, string> =>
  Effect.gen(function*() {
    // The same nonce on every retry lets Discord drop a duplicate of a part that did arrive.
    const nonce = yield* Effect.sync(() => randomBytes(12).toString("hex"))
    yield* post(Routes.channelMessages(channel), {
      content,
      nonce,
      enforce_nonce: true,
      allowed_mentions: { parse: [] }
    }).pipe(
      Effect.tapError((cause) =>
        isPermanent(cause)
          ? Effect.void
          : Effect.logWarning(`Discord send to channel ${channel} failed (${describeRestError(cause)}); retrying`)
      ),
      Effect.retry({ schedule: sendRetry, while: (cause) => !isPermanent(cause) }),
      Effect.mapError(describeRestError),
      Effect.timeoutFail({
        duration: partDeadline,
        onTimeout: () => `no success within ${Duration.format(partDeadline)}`
      })
    )
  })

/** Posts a reply's parts in order, until the first that cannot be delivered. */
const postReply = (post: RestPost, message: OutboundMessage): Effect.Effect<void, InteractError> =>
  Effect.gen(function*() {
    const { channel } = message
    if (!isDiscordId(channel)) {
      return yield* new InteractError({ message: `Cannot send to Discord channel "${channel}": not a channel id` })
    }
    const parts = chunkReply(message.text)
    if (parts.length === 0) {
      return yield* Effect.logWarning(`Empty reply for Discord channel ${channel}: nothing sent`)
    }
    for (const [index, part] of parts.entries()) {
      yield* postPart(post, channel, part).pipe(
        Effect.mapError((reason) =>
          new InteractError({
            message: `Could not deliver a reply to Discord channel ${channel} ` +
              `(part ${index + 1} of ${parts.length}): ${reason}`
          })
        )
      )
    }
  })

/**
 * The adapter's `send`. One reply at a time, so the parts of two replies never
 * interleave; the typing indicator for the channel ends however it went.
 */
export const makeSend = (
  post: RestPost,
  typing: TypingIndicator
): Effect.Effect<(message: OutboundMessage) => Effect.Effect<void, InteractError>> =>
  Effect.map(Effect.makeSemaphore(1), (sendLock) => (message) =>
    postReply(post, message).pipe(
      sendLock.withPermits(1),
      Effect.tapError((error) => Effect.logError(error.message)),
      Effect.ensuring(typing.end(message.channel))
    ))
