/**
 * The gateway connection for the adapter's whole life. discord.js owns
 * IDENTIFY, heartbeats, RESUME and reconnects; this module runs the adapter's
 * side of each gateway event (pacing, close codes, dispatches) for it, and
 * turns a fatal close after startup into the end of the message stream.
 */
import type { GatewayDispatchPayload, IIdentifyThrottler } from "discord.js"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import type { DiscordRefused } from "./DiscordRefused.js"
import { fatalCloseCodes } from "./Refusals.js"
import { type ClientCallbacks, login } from "./Login.js"
import { makeGatewayPacing } from "./Pacing.js"
import type { GatewayHooks } from "./ShardingStrategy.js"

/** The adapter's side of each gateway event. */
interface GatewayHandlers {
  readonly beforeConnect: Effect.Effect<void>
  readonly onHealthy: Effect.Effect<void>
  readonly onClosed: (code: number) => Effect.Effect<void>
  readonly onDispatch: (payload: GatewayDispatchPayload) => Effect.Effect<void>
  readonly waitToIdentify: Effect.Effect<void>
}

/** Tells a fatal close code to whoever needs it: the login before startup, the message stream after. */
const makeCloseWatch = Effect.gen(function*() {
  const fatal = yield* Deferred.make<never, DiscordRefused>()
  const started = yield* Ref.make(false)
  const shuttingDown = yield* Ref.make(false)
  const fatalClose = yield* Ref.make(Option.none<DiscordRefused>())

  const onClosed = (code: number) =>
    Effect.gen(function*() {
      if (yield* Ref.get(shuttingDown)) return
      const refused = fatalCloseCodes.get(code)
      if (refused === undefined) return yield* Effect.logWarning(`Discord gateway closed (code ${code}); reconnecting`)
      yield* Ref.set(fatalClose, Option.some(refused))
      // Before startup the login fails with this; afterwards the message stream does.
      if (yield* Ref.get(started)) {
        // Not logged here: whoever ends the process reports it, as one line (exit 2).
        yield* Deferred.fail(fatal, refused)
      }
    })

  return {
    onClosed,
    takeFatalClose: Ref.getAndSet(fatalClose, Option.none()),
    markStarted: Ref.set(started, true),
    markShuttingDown: Ref.set(shuttingDown, true),
    fatal: Deferred.await(fatal)
  }
})

/**
 * discord.js calls back with plain functions and promises. Dispatches and
 * closes run synchronously, as ordering matters for them; waits (backoff,
 * IDENTIFY throttle) run as fibers that end with the scope.
 */
const makeClientCallbacks = (handlers: GatewayHandlers): Effect.Effect<ClientCallbacks, never, Scope.Scope> =>
  Effect.gen(function*() {
    const runNow = Effect.runSyncExitWith(yield* Effect.context<never>())
    const runInBackground = yield* FiberSet.makeRuntime<never>()
    const report = (exit: Exit.Exit<unknown, unknown>) => {
      if (Exit.isFailure(exit)) runInBackground(Effect.logError("Discord bridge: a gateway event failed", exit.cause))
    }

    const hooks: GatewayHooks = {
      beforeConnect: () =>
        new Promise((resolve) => {
          runInBackground(handlers.beforeConnect).addObserver((exit) => {
            if (Exit.isSuccess(exit)) resolve()
          })
        }),
      healthy: () => report(runNow(handlers.onHealthy)),
      closed: (code) => report(runNow(handlers.onClosed(code))),
      dispatch: (payload) => report(runNow(handlers.onDispatch(payload))),
      forward: (emit, event) => {
        const exit = runNow(
          Effect.try({ try: emit, catch: (cause) => cause }).pipe(
            Effect.tapError((cause) => Effect.logWarning(`discord.js failed on gateway event ${event}; ignored`, cause))
          )
        )
        return Exit.isSuccess(exit) && exit.value
      }
    }

    const identifyThrottler: IIdentifyThrottler = {
      waitForIdentify: (_shardId, signal) =>
        new Promise<void>((resolve, reject) => {
          const fiber = runInBackground(handlers.waitToIdentify)
          const abort = () => fiber.interruptUnsafe()
          signal.addEventListener("abort", abort, { once: true })
          fiber.addObserver((exit) => {
            signal.removeEventListener("abort", abort)
            if (Exit.isSuccess(exit)) resolve()
            else if (signal.aborted) reject(signal.reason)
          })
        })
    }

    return {
      hooks,
      identifyThrottler,
      onClientError: (error) => {
        runInBackground(Effect.logWarning("discord.js reported an error", error))
      }
    }
  })

/**
 * Logs in and keeps the gateway connected while the scope lasts. Returns an
 * effect that fails once Discord closes the gateway for good (a revoked
 * token, a refused intent).
 */
export const connectGateway = (
  apiUrl: string,
  token: string,
  directMessages: boolean,
  onDispatch: GatewayHandlers["onDispatch"]
): Effect.Effect<Effect.Effect<never, DiscordRefused>, DiscordRefused, Scope.Scope> =>
  Effect.gen(function*() {
    const pacing = yield* makeGatewayPacing
    const closes = yield* makeCloseWatch
    const callbacks = yield* makeClientCallbacks({
      beforeConnect: pacing.beforeConnect,
      onHealthy: pacing.onHealthy,
      onClosed: closes.onClosed,
      onDispatch,
      waitToIdentify: pacing.waitToIdentify
    })
    yield* login({
      apiUrl,
      token,
      directMessages,
      callbacks,
      onNewClient: pacing.onNewClient,
      takeFatalClose: closes.takeFatalClose
    })
    yield* closes.markStarted
    // Added after the client, so it runs first on release: our own close is not news.
    yield* Effect.addFinalizer(() => closes.markShuttingDown)
    return closes.fatal
  })
