/**
 * Delivery of owed replies (Outbox), one lane per channel: a channel's
 * replies go out in order, one at a time, so their parts never interleave;
 * a channel Discord keeps refusing, or an outage of one channel's retries,
 * never holds up another channel. A lane is a fiber that lives while its
 * channel has replies waiting, so the fibers are bounded by the channels
 * with something owed.
 *
 * A part is retried while a retry may help (5xx, network, a 429), with the
 * same nonce each time, for about ten minutes; a 429 is waited out as long as
 * Discord asks, within the part's fifteen minutes. A refusal (403, 404, a
 * 4xx), running out of attempts, or a 429 asking to wait past the part's
 * deadline gives the reply up. Either way the
 * failure is logged once, naming the channel and the part, and the reply
 * leaves the outbox.
 */
import { RateLimitError } from "discord.js"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { InteractError } from "../../ports/Interact.js"
import { channelPostBody, noMentions } from "./ChannelPost.js"
import type { Outbox, Owed } from "./Outbox.js"
import { describeRestError, isPermanent } from "./Refusals.js"
import type { ReplyTarget } from "./ReplyTargets.js"

/** One REST request: POST or PATCH; webhook routes go without the bot token. */
export type RestCall = (
  route: `/${string}`,
  body?: unknown,
  options?: { readonly method?: "POST" | "PATCH"; readonly auth?: boolean }
) => Effect.Effect<unknown, unknown>

/** A failed part (5xx, network, timeout): 1 s doubling to 60 s, about ten minutes in all, then give up. */
export const partRetry = Schedule.exponential("1 second").pipe(
  Schedule.jittered,
  Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(60)))),
  Schedule.upTo({ times: 15 })
)

/** Longest one part may take, rate limits and retries included. */
const partDeadline = Duration.minutes(15)

/** Discord's interaction tokens last 15 minutes; past this, a reply goes to the channel instead. */
const interactionTokenLife = Duration.toMillis("14 minutes")

/** When Discord made an object, read from its snowflake id; 0 (long ago) for anything that is not one. */
const createdAt = (snowflake: string): number =>
  /^\d{1,20}$/.test(snowflake) ? Number((BigInt(snowflake) >> 22n) + 1_420_070_400_000n) : 0

type Route =
  | { readonly _tag: "Channel"; readonly reference: Option.Option<string> }
  | { readonly _tag: "EditOriginal" | "FollowUp"; readonly applicationId: string; readonly token: string }

const routeFor = (target: Option.Option<ReplyTarget>, index: number, now: number, webhookFailed: boolean): Route => {
  if (Option.isNone(target)) return { _tag: "Channel", reference: Option.none() }
  const question = target.value
  if (question._tag === "Message") {
    return { _tag: "Channel", reference: index === 0 ? Option.some(question.messageId) : Option.none() }
  }
  if (webhookFailed || now - createdAt(question.interactionId) > interactionTokenLife) {
    return { _tag: "Channel", reference: Option.none() }
  }
  return { _tag: index === 0 ? "EditOriginal" : "FollowUp", applicationId: question.applicationId, token: question.token }
}

const webhookRoute = (route: { applicationId: string; token: string }) =>
  `/webhooks/${route.applicationId}/${encodeURIComponent(route.token)}` as const

const request = (call: RestCall, channel: string, route: Route, part: Owed["parts"][number]) => {
  switch (route._tag) {
    case "Channel":
      return call(`/channels/${channel}/messages`, channelPostBody(part, route.reference))
    case "EditOriginal":
      return call(`${webhookRoute(route)}/messages/@original`, { content: part.content, allowed_mentions: noMentions }, {
        method: "PATCH",
        auth: false
      })
    case "FollowUp":
      return call(webhookRoute(route), { content: part.content, allowed_mentions: noMentions }, { auth: false })
  }
}

/** A 429 asking for a wait that would end past the part's deadline: waiting cannot deliver it in time. */
class RateLimitPastDeadline extends Data.TaggedError("RateLimitPastDeadline")<{ readonly message: string }> {}

/** A 429 discord.js hands back rather than sleeping through (Replies): longer than a minute. */
const isLongRateLimit = (cause: unknown): cause is RateLimitError => cause instanceof RateLimitError && cause.retryAfter > 0

const isFinal = (cause: unknown): boolean => isPermanent(cause) || cause instanceof RateLimitPastDeadline

/**
 * Sends one part, retrying what may pass later, and waiting out a long 429
 * as Discord asks while the part's deadline allows; the first failure is
 * logged once, as a warning.
 */
const sendPart = (call: RestCall, owed: Owed, route: Route, index: number, warned: { value: boolean }) =>
  Effect.gen(function*() {
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(partDeadline)
    const warnOnce = (message: string) =>
      warned.value ? Effect.void : Effect.andThen(Effect.sync(() => (warned.value = true)), Effect.logWarning(message))
    const waitOut = (limit: RateLimitError): Effect.Effect<unknown, unknown> =>
      Effect.gen(function*() {
        const left = deadline - (yield* Clock.currentTimeMillis)
        if (limit.retryAfter > left) {
          return yield* new RateLimitPastDeadline({
            message: `${describeRestError(limit)}, more than the ${Math.max(0, Math.floor(left / 1000))} s ` +
              `left of the part's ${Duration.toMinutes(partDeadline)} minutes`
          })
        }
        yield* warnOnce(`Discord send to channel ${owed.channel}: ${describeRestError(limit)}; waiting as Discord asks`)
        yield* Effect.sleep(limit.retryAfter)
        return yield* attempt
      })
    const attempt: Effect.Effect<unknown, unknown> = Effect.suspend(() =>
      request(call, owed.channel, route, owed.parts[index]!).pipe(Effect.catchIf(isLongRateLimit, waitOut))
    )
    return yield* attempt.pipe(
      Effect.tapError((cause) =>
        isFinal(cause)
          ? Effect.void
          : warnOnce(
            `Discord send to channel ${owed.channel} failed (${describeRestError(cause)}); retrying for up to ten minutes`
          )
      ),
      Effect.retry({ schedule: partRetry, while: (cause) => !isFinal(cause) })
    )
  }).pipe(
    Effect.timeoutOrElse({ duration: partDeadline, orElse: () => Effect.fail(`no success within ${Duration.format(partDeadline)}`) }),
    Effect.mapError((cause) =>
      typeof cause === "string" ? cause : cause instanceof RateLimitPastDeadline ? cause.message : describeRestError(cause)
    ),
    Effect.asVoid
  )

/**
 * Sends the parts of `owed` not yet accepted, noting each in the outbox.
 * An interaction whose token was refused falls back to the channel.
 */
export const deliver = (call: RestCall, outbox: Outbox, owed: Owed): Effect.Effect<void, InteractError> =>
  Effect.gen(function*() {
    const warned = { value: false }
    let webhookFailed = false
    for (let index = owed.sent; index < owed.parts.length; index++) {
      const now = yield* Clock.currentTimeMillis
      const route = routeFor(owed.target, index, now, webhookFailed)
      const sent = yield* sendPart(call, owed, route, index, warned).pipe(
        Effect.catch((reason) => {
          if (route._tag === "Channel") return Effect.fail(reason)
          webhookFailed = true
          return sendPart(call, owed, routeFor(owed.target, index, now, true), index, warned)
        }),
        Effect.result
      )
      if (sent._tag === "Failure") {
        return yield* new InteractError({
          message: `Could not deliver a reply to Discord channel ${owed.channel} ` +
            `(part ${index + 1} of ${owed.parts.length}): ${sent.failure}`
        })
      }
      yield* outbox.partSent(owed, index)
    }
  })

export interface Lanes {
  /**
   * Queues `owed` on its channel's lane; the returned Deferred completes when
   * it is delivered or given up. `then` runs after either (the typing indicator).
   * `report`: log a failure here (false when whoever awaits the Deferred reports it).
   */
  readonly submit: (
    owed: Owed,
    options: { readonly then: Effect.Effect<void>; readonly report: boolean }
  ) => Effect.Effect<Deferred.Deferred<void, InteractError>>
}

interface Job {
  readonly owed: Owed
  readonly then: Effect.Effect<void>
  readonly report: boolean
  readonly done: Deferred.Deferred<void, InteractError>
}

/** Lanes whose fibers end with the scope. */
export const makeLanes = (call: RestCall, outbox: Outbox): Effect.Effect<Lanes, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const lanes = new Map<string, Queue.Queue<Job>>()
    const lock = yield* Semaphore.make(1)

    const run = (job: Job) =>
      deliver(call, outbox, job.owed).pipe(
        Effect.tapError((error) => job.report ? Effect.logError(error.message) : Effect.void),
        Effect.exit,
        Effect.tap(() => outbox.finished(job.owed)),
        Effect.tap(() => job.then),
        Effect.flatMap((exit) => Deferred.done(job.done, exit))
      )

    /** Takes the channel's jobs until none is left, then closes the lane (under the lock, so no job is stranded). */
    const drain = (channel: string, queue: Queue.Queue<Job>): Effect.Effect<void> =>
      Effect.gen(function*() {
        for (;;) {
          const next: Option.Option<Job> = yield* lock.withPermits(1)(
            Effect.tap(Queue.poll(queue), (job) => Option.isNone(job) ? Effect.sync(() => lanes.delete(channel)) : Effect.void)
          )
          if (Option.isNone(next)) return
          yield* run(next.value)
        }
      })

    return {
      submit: (owed, { report, then }) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<void, InteractError>()
          yield* lock.withPermits(1)(Effect.gen(function*() {
            const existing = lanes.get(owed.channel)
            if (existing !== undefined) return yield* Queue.offer(existing, { owed, then, report, done })
            const queue = yield* Queue.unbounded<Job>()
            lanes.set(owed.channel, queue)
            yield* Queue.offer(queue, { owed, then, report, done })
            yield* Effect.forkIn(drain(owed.channel, queue), scope)
          }))
          return done
        })
    }
  })
