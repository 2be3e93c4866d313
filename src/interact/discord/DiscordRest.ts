/**
 * The inbound side's REST client (@discordjs/rest): channel lookups, missed
 * messages, command registration and interaction acknowledgements. Kept
 * apart from the replies' client so a slow lookup never queues behind a
 * reply, nor a reply behind a lookup.
 *
 * A 429 asking for a wait longer than `longestRateLimitWait` (or giving no
 * Retry-After, which discord.js would retry at once, again and again) is
 * handed back as a RateLimitError instead of slept through unseen: the
 * caller logs it, saying how long, and tries again once the wait is over.
 */
import { REST } from "discord.js"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

export interface DiscordRest {
  readonly get: (route: `/${string}`, query?: Record<string, string>) => Effect.Effect<unknown, unknown>
  readonly put: (route: `/${string}`, body: unknown) => Effect.Effect<unknown, unknown>
  /** `auth: false` for interaction callbacks: their token is in the route. */
  readonly post: (route: `/${string}`, body: unknown, auth?: boolean) => Effect.Effect<unknown, unknown>
}

/** The longest 429 wait discord.js sleeps through on its own: a bucket's usual pacing. */
export const longestRateLimitWait = Duration.seconds(10)

const rejectRateLimit = (limit: { readonly retryAfter: number }): boolean =>
  limit.retryAfter <= 0 || limit.retryAfter > Duration.toMillis(longestRateLimitWait)

/** A REST client for the adapter's own requests; its sweeper timers stop with the scope. */
export const make = (apiUrl: string, token: string): Effect.Effect<DiscordRest, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => new REST({ api: apiUrl, version: "10", retries: 1, timeout: 15_000, rejectOnRateLimit: rejectRateLimit }).setToken(token)),
    (rest) =>
      Effect.sync(() => {
        rest.clearHashSweeper()
        rest.clearHandlerSweeper()
      })
  ).pipe(Effect.map((rest): DiscordRest => ({
    get: (route, query) =>
      Effect.tryPromise({
        try: (signal) => rest.get(route, { signal, ...(query === undefined ? {} : { query: new URLSearchParams(query) }) }),
        catch: (cause) => cause
      }),
    put: (route, body) => Effect.tryPromise({ try: (signal) => rest.put(route, { body, signal }), catch: (cause) => cause }),
    post: (route, body, auth = true) =>
      Effect.tryPromise({ try: (signal) => rest.post(route, { body, signal, auth }), catch: (cause) => cause })
  })))
