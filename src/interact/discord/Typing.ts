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
 * `end` can never overtake the `begin` of the same message.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Fiber from "effect/Fiber"
import type * as FiberId from "effect/FiberId"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"

export interface TypingOptions {
  /** How often to show the indicator again; below Discord's ten seconds. */
  readonly refreshEvery: Duration.DurationInput
  /** How long it may show while waiting for replies that never come. */
  readonly giveUpAfter: Duration.DurationInput
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
  | { readonly _tag: "GaveUp"; readonly channel: string; readonly refresher: FiberId.FiberId }

interface ChannelState {
  readonly pending: number
  readonly refresher: Fiber.RuntimeFiber<void>
}

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
    const scope = yield* Effect.scope
    const refreshes = Math.floor(Duration.toMillis(giveUpAfter) / Duration.toMillis(refreshEvery))
    const commands = yield* Effect.acquireRelease(Queue.unbounded<Command>(), Queue.shutdown)
    const channels = new Map<string, ChannelState>()

    const startRefresher = (channel: string) =>
      show(channel).pipe(
        Effect.timeout(refreshEvery),
        Effect.catchAllCause((cause) => Effect.logDebug(`Discord typing indicator for channel ${channel} failed`, cause)),
        // Forked, so a slow request never delays the next one.
        Effect.fork,
        Effect.zipRight(Effect.sleep(refreshEvery)),
        Effect.repeat(Schedule.recurs(refreshes)),
        Effect.zipRight(Effect.fiberId),
        Effect.flatMap((refresher) => Queue.offer(commands, { _tag: "GaveUp", channel, refresher })),
        Effect.asVoid,
        Effect.forkIn(scope)
      )

    const handle = (command: Command): Effect.Effect<void> =>
      Effect.gen(function*() {
        const state = channels.get(command.channel)
        switch (command._tag) {
          case "Begin": {
            // A refresher that gave up but whose notice is still queued is replaced.
            const refresher = state === undefined || state.refresher.unsafePoll() !== null
              ? yield* startRefresher(command.channel)
              : state.refresher
            channels.set(command.channel, { pending: (state?.pending ?? 0) + 1, refresher })
            return
          }
          case "GaveUp": {
            if (state !== undefined && Equal.equals(state.refresher.id(), command.refresher)) {
              channels.delete(command.channel)
            }
            return
          }
          case "End": {
            if (state !== undefined) {
              yield* Fiber.interrupt(state.refresher)
              if (state.pending <= 1) {
                channels.delete(command.channel)
              } else {
                // Discord hides the indicator when the bot posts; show it again for the next reply.
                channels.set(command.channel, {
                  pending: state.pending - 1,
                  refresher: yield* startRefresher(command.channel)
                })
              }
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
