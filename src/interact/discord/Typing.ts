/**
 * When to show a "typing…" indicator, apart from how it is shown.
 *
 * Discord shows the indicator for ten seconds after each request, so a
 * channel with a reply pending gets one request at once and another every
 * `refreshEvery` until the last pending reply is out. Each accepted message
 * counts once: two queued messages in a channel keep it typing until both
 * replies are sent. A reply that never comes stops the indicator after
 * `giveUpAfter` rather than keeping it up forever; the channel then starts
 * afresh with its next message.
 *
 * One fiber owns the per-channel state and takes commands in order, so an
 * `end` can never overtake the `begin` of the same message. A channel's
 * refresher lives in a FiberMap; a refresher that gave up has left the map,
 * and then the channel's pending count is stale: the next command for that
 * channel starts it afresh.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"

export interface TypingOptions {
  /** How often to show the indicator again; below Discord's ten seconds. */
  readonly refreshEvery: Duration.Input
  /** How long it may show while waiting for replies that never come. */
  readonly giveUpAfter: Duration.Input
}

export const defaultTypingOptions: TypingOptions = { refreshEvery: "8 seconds", giveUpAfter: "10 minutes" }

export interface TypingIndicator {
  /** A message from `channel` was accepted: show typing until its reply is out. Never waits. */
  readonly begin: (channel: string) => Effect.Effect<void>
  /**
   * The reply to one accepted message was sent, or finally failed. Completes
   * once the indicator state is updated: no refresh for a finished channel
   * starts after it.
   */
  readonly end: (channel: string) => Effect.Effect<void>
}

type Command =
  | { readonly _tag: "Begin"; readonly channel: string }
  | { readonly _tag: "End"; readonly channel: string; readonly done: Deferred.Deferred<void> }

/**
 * `show` sends the indicator once. Its failures are logged at debug level and
 * otherwise ignored: a missing indicator must never cost a reply.
 */
export const make = (
  show: (channel: string) => Effect.Effect<void, unknown>,
  options: Partial<TypingOptions> = {}
): Effect.Effect<TypingIndicator, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { giveUpAfter, refreshEvery } = { ...defaultTypingOptions, ...options }
    const refreshes = Math.floor(Duration.toMillis(giveUpAfter) / Duration.toMillis(refreshEvery))
    const commands = yield* Effect.acquireRelease(Queue.unbounded<Command>(), Queue.shutdown)
    const refreshers = yield* FiberMap.make<string>()
    // Replies still to come per channel; meaningful only while the channel's refresher runs.
    const pending = new Map<string, number>()

    const refresher = (channel: string) =>
      show(channel).pipe(
        Effect.timeout(refreshEvery),
        Effect.catchCause((cause) => Effect.logDebug(`Discord typing indicator for channel ${channel} failed`, cause)),
        // Forked, so a slow request never delays the next one.
        Effect.forkChild,
        Effect.andThen(Effect.sleep(refreshEvery)),
        Effect.repeat(Schedule.recurs(refreshes)),
        Effect.asVoid
      )

    /** The channel's count, or 0 once its refresher gave up (the replies that never came no longer count). */
    const pendingIn = (channel: string) =>
      Effect.map(FiberMap.has(refreshers, channel), (running) => running ? pending.get(channel) ?? 0 : 0)

    const handle = (command: Command): Effect.Effect<void> =>
      Effect.gen(function*() {
        const count = yield* pendingIn(command.channel)
        switch (command._tag) {
          case "Begin": {
            if (count === 0) yield* FiberMap.run(refreshers, command.channel, refresher(command.channel))
            pending.set(command.channel, count + 1)
            return
          }
          case "End": {
            yield* FiberMap.remove(refreshers, command.channel)
            if (count <= 1) {
              pending.delete(command.channel)
            } else {
              // Discord hides the indicator when the bot posts; show it again for the next reply.
              pending.set(command.channel, count - 1)
              yield* FiberMap.run(refreshers, command.channel, refresher(command.channel))
            }
            yield* Deferred.succeed(command.done, undefined)
          }
        }
      })

    yield* Queue.take(commands).pipe(Effect.flatMap(handle), Effect.forever, Effect.forkScoped)

    return {
      begin: (channel) => Queue.offer(commands, { _tag: "Begin", channel }).pipe(Effect.asVoid),
      end: (channel) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<void>()
          yield* Queue.offer(commands, { _tag: "End", channel, done })
          yield* Deferred.await(done)
        })
    }
  })
