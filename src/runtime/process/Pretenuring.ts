/**
 * V8's allocation-site pretenuring, turned off for a long-running agent.
 *
 * V8 allocates an allocation site's objects straight in the old generation
 * once most of them survive scavenges. On a turn's path this feeds itself:
 * Effect's objects for one request (an `Effect.callback` that returns a
 * canceler, its continuations) get pretenured and die at once in the old
 * generation, but the young objects written into them afterwards (the
 * answer, the next frame) stay reachable from there for every scavenge until
 * a full collection, through the old generation's remembered set. So they
 * survive, are promoted, and keep their sites pretenured. The FIFO agent
 * promoted 0.8–1.3 MB per scavenge this way, with pauses of 1.5–6 ms, one
 * turn in ninety; without pretenuring about 0.07 MB and 0.9 ms (see
 * bench/OPTIMISATION-PLAN.md). A bare loop of such requests reproduces it,
 * and `--no-allocation-site-pretenuring` alone ends it.
 *
 * The flag is set by the command line's own runs once the agent has started
 * (V8Flags.ts), never by a Layer an embedding application builds.
 * `PLANCKCLAW_V8_PRETENURING=1` keeps V8's default.
 */
import type * as ConfigError from "effect/Config"
import * as Effect from "effect/Effect"
import { switchOf } from "../../config/ConfigRange.js"
import { V8Pretenuring } from "../../config/settings/Agent.js"
import { setV8Flags } from "./V8Flags.js"

/** `1`: leave V8's pretenuring on (its default); unset or `0`: the run turns it off. */
export const PretenuringConfig = switchOf(V8Pretenuring)

/** The V8 flag that turns allocation-site pretenuring off. */
export const noPretenuringFlag = "--no-allocation-site-pretenuring"

/**
 * Reads the setting (so a malformed value is refused at start-up with the
 * others); the effect it gives turns V8's pretenuring off for this process,
 * unless the setting keeps it. `setFlags` sets V8 flags; tests pass a
 * recorder.
 */
export const readChoice = (
  setFlags: (flags: string) => Effect.Effect<void> = setV8Flags
): Effect.Effect<Effect.Effect<void>, ConfigError.ConfigError> =>
  Effect.map(PretenuringConfig, (kept) =>
    kept
      ? Effect.void
      : Effect.andThen(
        setFlags(noPretenuringFlag),
        Effect.logDebug("V8's allocation-site pretenuring turned off (PLANCKCLAW_V8_PRETENURING=1 keeps it)")
      ))
