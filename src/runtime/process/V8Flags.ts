/**
 * Sets V8 flags in this process once it runs (`v8.setFlagsFromString`): the
 * command line's own runs tune V8 this way after start-up, because any V8
 * flag on node's command line costs a start about 20 ms (node then refuses
 * its code cache for the built-in modules). Never called by a Layer an
 * embedding application builds: its process, its V8.
 *
 * V8 refuses a code cache made under flags other than its own, so the
 * command line's loader (bin/code-cache.cjs) is first given the chance to
 * write a cache it still owes, made under the flags the next start has.
 */
import * as Effect from "effect/Effect"

/** What bin/code-cache.cjs leaves on globalThis while it has a cache to write. */
const beforeFlagsChange = Symbol.for("planckclaw/beforeV8FlagsChange")

const writeOwedCodeCaches = (): void => {
  const write = (globalThis as { [beforeFlagsChange]?: unknown })[beforeFlagsChange]
  if (typeof write === "function") write()
}

/** Runs an effect (the agent's serving) as it is, with a V8 tuning beside it: EarlyTierUp's, YoungGeneration's. */
export type During = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

// Loaded only when a flag is set, after the start: loading node:v8 costs a start ~1.5 ms.
export const setV8Flags = (flags: string): Effect.Effect<void> =>
  Effect.map(Effect.promise(() => import("node:v8")), (v8) => {
    writeOwedCodeCaches()
    v8.setFlagsFromString(flags)
  })
