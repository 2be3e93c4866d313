/**
 * A real HTTP exchange under the TestClock: the real undici client with
 * jitter pinned to its midpoint (backoff exactly 1s, 2s, 4s, …), so a test
 * can wait for that very sleep (TestClockWait.advanceTo).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Random } from "effect"

/**
 * Jitter at its midpoint: retries sleep exactly 1 s, 2 s, 4 s…, so a test can
 * wait for that very sleep (advanceTo). Fibers the effect forks inherit it.
 */
const midpoint: Random.Random = { nextDoubleUnsafe: () => 0.5, nextIntUnsafe: () => 0 }

export const withPinnedJitter = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Random.Random, midpoint)

export const withRealHttp = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(withPinnedJitter, Effect.provide(NodeHttpClient.layerUndici))
