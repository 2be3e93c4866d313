/**
 * When the gateway may connect and identify: exponential backoff between
 * failed connection attempts (reset once a connection is healthy), and
 * Discord's limit of one IDENTIFY per five seconds.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Semaphore from "effect/Semaphore"

/** Gateway reconnects and logins after a failure: 5 s doubling to 60 s, with jitter. Outputs each delay. */
export const reconnectBackoff: Schedule.Schedule<Duration.Duration> = Schedule.exponential("5 seconds").pipe(
  Schedule.jittered,
  Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(60)))),
  Schedule.map(({ duration }) => duration)
)

/** A delay as the logs show it. */
export const seconds = (delay: Duration.Duration): string => `${Math.round(Duration.toSeconds(delay))} s`

/** Discord allows one IDENTIFY per five seconds. */
const identifyInterval = Duration.seconds(5)

export interface GatewayPacing {
  /** Before a shard connects: waits out the backoff if the previous attempt never became healthy. */
  readonly beforeConnect: Effect.Effect<void>
  /** A connection is READY or RESUMED: the backoff starts again from the bottom. */
  readonly onHealthy: Effect.Effect<void>
  /** A new client is about to log in: the login retry has already waited, so its first connection goes at once. */
  readonly onNewClient: Effect.Effect<void>
  /** Before an IDENTIFY: waits until five seconds have passed since the last one. */
  readonly waitToIdentify: Effect.Effect<void>
}

const makeReconnectPacing = Effect.gen(function*() {
  // Each step logs its delay, then sleeps it; a new step function starts the backoff from the bottom.
  const newBackoff = Schedule.toStepWithSleep(
    reconnectBackoff.pipe(
      Schedule.tap(({ duration }) =>
        Effect.logWarning(`Discord gateway connection failed; trying again in ${seconds(duration)}`)
      )
    )
  )
  const backoff = yield* Ref.make(yield* newBackoff)
  // Set once the backoff has waited since it last started from the bottom.
  const backedOff = yield* Ref.make(false)
  // Set while a connection attempt has not yet proved healthy: the next attempt means it failed.
  const awaitingHealthy = yield* Ref.make(false)
  const beforeConnect = Effect.gen(function*() {
    const previousFailed = yield* Ref.getAndSet(awaitingHealthy, true)
    if (previousFailed) {
      yield* Ref.set(backedOff, true)
      yield* Effect.ignore((yield* Ref.get(backoff))(undefined))
    }
  })
  const onHealthy = Effect.gen(function*() {
    yield* Ref.set(awaitingHealthy, false)
    if (yield* Ref.getAndSet(backedOff, false)) {
      yield* Effect.logInfo("Discord gateway connected again")
    }
    yield* Ref.set(backoff, yield* newBackoff)
  })
  return { beforeConnect, onHealthy, onNewClient: Ref.set(awaitingHealthy, false) }
})

const makeIdentifyThrottle = Effect.gen(function*() {
  const identifyGate = yield* Semaphore.make(1)
  const lastIdentify = yield* Ref.make(Option.none<number>())
  return identifyGate.withPermits(1)(Effect.gen(function*() {
    const last = yield* Ref.get(lastIdentify)
    if (Option.isSome(last)) {
      const wait = last.value + Duration.toMillis(identifyInterval) - (yield* Clock.currentTimeMillis)
      if (wait > 0) yield* Effect.sleep(wait)
    }
    yield* Ref.set(lastIdentify, Option.some(yield* Clock.currentTimeMillis))
  }))
})

export const makeGatewayPacing: Effect.Effect<GatewayPacing> = Effect.gen(function*() {
  const reconnect = yield* makeReconnectPacing
  const waitToIdentify = yield* makeIdentifyThrottle
  return { ...reconnect, waitToIdentify }
})
