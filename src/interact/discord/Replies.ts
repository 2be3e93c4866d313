/**
 * Replies out: a REST client of their own (@discordjs/rest, which waits out
 * 429s as Retry-After says), so they are delivered while the gateway
 * reconnects. A reply is cut into parts, each given a nonce Discord uses to
 * drop duplicates, journaled in the outbox (Outbox) with the question it
 * answers (ReplyTarget), and delivered on its channel's lane
 * (ChannelDelivery): the first part references the question, or edits the
 * deferred response of a slash command.
 */
import { REST, Routes } from "discord.js"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Option from "effect/Option"
import { InteractError, type OutboundMessage } from "../../ports/Interact.js"
import { makeLanes, type RestCall } from "./ChannelDelivery.js"
import { newNonce, nonceFor } from "./ChannelPost.js"
import type { Outbox } from "./Outbox.js"
import { chunkReply } from "./ReplyChunks.js"
import type { ReplyTarget } from "./ReplyTargets.js"
import { isDiscordId } from "./Settings.js"
import type { TypingIndicator } from "./Typing.js"

export type { RestCall } from "./ChannelDelivery.js"
/** The REST client as the typing indicator and replies use it. */
export type RestPost = RestCall

/** A 429 asking for a longer wait than this is handed back to us (a RateLimitError) instead of slept through. */
const longestRateLimitWait = Duration.minutes(1)

/**
 * discord.js waits out a 429 as its Retry-After header says. Without the
 * header it would retry at once, again and again; and a very long wait would
 * be hidden in its own timer, out of the part's deadline's sight. Both are
 * handed back as errors: the first is retried on our schedule, the second is
 * waited out by ChannelDelivery if the part's deadline allows, else fails it.
 */
const rejectRateLimit = (limit: { readonly retryAfter: number }): boolean =>
  limit.retryAfter <= 0 || limit.retryAfter > Duration.toMillis(longestRateLimitWait)

/** A REST client for replies and the typing indicator; its sweeper timers stop with the scope. */
export const makeRestPost = (apiUrl: string, token: string): Effect.Effect<RestCall, never, Scope.Scope> =>
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
    Effect.map((rest): RestCall => (route, body, options = {}) =>
      Effect.tryPromise({
        try: (signal) =>
          options.method === "PATCH"
            ? rest.patch(route, { body, signal, auth: options.auth ?? true })
            : rest.post(route, { body, signal, auth: options.auth ?? true }),
        catch: (cause) => cause
      })
    )
  )

/** Shows "typing…" in a channel for ten seconds, or until the bot posts there. */
export const showTyping = (post: RestCall) => (channel: string): Effect.Effect<unknown, unknown> =>
  post(Routes.channelTyping(channel))

/** Sending a reply that answers `target` (none: a plain message in the channel). */
export interface Sending {
  /** Delivers it; fails once it finally cannot be. */
  readonly send: (message: OutboundMessage, target: Option.Option<ReplyTarget>) => Effect.Effect<void, InteractError>
  /** Journals it in the outbox and gives its delivery, which completes once it is delivered or given up (logged). */
  readonly accept: (message: OutboundMessage, target: Option.Option<ReplyTarget>) => Effect.Effect<Effect.Effect<void>>
}

/**
 * The adapter's `send` and `accept`. Replies journaled by an earlier run are
 * queued first, before any new one; their typing indicators are long gone.
 */
export const makeSend = (
  post: RestCall,
  typing: TypingIndicator,
  outbox: Outbox
): Effect.Effect<Sending, never, Scope.Scope> =>
  Effect.gen(function*() {
    const lanes = yield* makeLanes(post, outbox)
    if (outbox.recovered.length > 0) {
      yield* Effect.logInfo(`sending ${outbox.recovered.length} Discord reply(ies) a previous run did not finish`)
    }
    for (const owed of outbox.recovered) yield* lanes.submit(owed, { then: Effect.void, report: true })

    /** Journals and queues the reply; the Deferred completes once it is delivered or given up. */
    const take = (message: OutboundMessage, target: Option.Option<ReplyTarget>, report: boolean) =>
      Effect.gen(function*() {
        const { channel } = message
        // A message sent unprompted answers none this bridge began typing for: the channel's typing stays as it is.
        const end = message.unprompted === true ? Effect.void : typing.end(channel)
        if (!isDiscordId(channel)) {
          yield* end
          return yield* new InteractError({ message: `Cannot send to Discord channel "${channel}": not a channel id` })
        }
        const contents = chunkReply(message.text)
        if (contents.length === 0) {
          yield* end
          yield* Effect.logWarning(`Empty reply for Discord channel ${channel}: nothing sent`)
          return yield* Deferred.make<void, InteractError>().pipe(Effect.tap((done) => Deferred.succeed(done, undefined)))
        }
        const { key } = message
        if (key !== undefined && outbox.knows(key)) {
          // Taken before (handed over again after a restart): owed already, or delivered; never posted twice.
          yield* end
          yield* Effect.logDebug(`The Discord reply to ${key} was taken already: not sent again`)
          return yield* Deferred.make<void, InteractError>().pipe(Effect.tap((done) => Deferred.succeed(done, undefined)))
        }
        const parts = yield* Effect.forEach(contents, (content, index) =>
          key === undefined ? Effect.map(newNonce, (nonce) => ({ content, nonce })) : Effect.succeed({ content, nonce: nonceFor(key, index) }))
        const owed = yield* outbox.queue({ channel, parts, target, key, at: yield* Clock.currentTimeMillis })
        return yield* lanes.submit(owed, { then: end, report })
      })

    return {
      send: (message, target) => take(message, target, false).pipe(Effect.flatMap(Deferred.await)),
      accept: (message, target) =>
        take(message, target, true).pipe(
          Effect.map((done) => Effect.ignore(Deferred.await(done))),
          Effect.catch((error) => Effect.as(Effect.logError(error.message), Effect.void))
        )
    }
  })
