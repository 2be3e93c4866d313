/**
 * V8 optimises a young process's hot code sooner, then goes back to its own
 * pace.
 *
 * V8 compiles a function with its optimising tier (TurboFan) once the
 * function has been called often enough: `--invocation-count-for-turbofan`,
 * 3,000 on Node 22 and 24 (Node 20's V8 counted bytecode run instead, its
 * `--interrupt-budget`, which later V8s refuse as an unknown flag). Much of
 * a turn's code runs once per turn, so at V8's pace the agent's code keeps
 * being optimised, on V8's background threads, for its first three to five
 * thousand turns: those compiles take the cores the turn's processes need,
 * and until they land the turn runs slower code. Measured on Node 20 at
 * shipped settings (bench/OPTIMISATION-PLAN.md, alternated runs of 2,000
 * FIFO turns after 300): a quarter of the budget gave p50 −0.16 ms,
 * main-thread CPU −118 µs and p99 −0.8 ms over those turns. With the count
 * on Node 22.23 and 24.22 (bench/ab-p99.mjs, this build with
 * PLANCKCLAW_V8_EARLY_TIER_UP=0 against =1, 6 paired runs of 2,000 turns
 * after 300, on two cores kept busy by other work): on, the median of the
 * runs' differences was main-thread CPU −136 µs per turn and p50 −0.27 ms
 * on Node 22 (CPU lower in all 6 runs), −29 µs and −0.10 ms on Node 24
 * (lower in 4 of 6); the p99s of those minutes (24–95 ms) say nothing.
 * On a quiet machine (bench/compare-runs/tier-up-off-on-quiet.txt) it still
 * saved CPU (−97 µs on Node 22, −35 µs on Node 24) but lengthened the p99
 * (+0.60 ms, higher in 5 of 6 runs; +1.95 ms, 6 of 6), and with it on the
 * FIFO turn's tail was the one row worse than the Effect 3 build's: so it is
 * opt-in (`PLANCKCLAW_V8_EARLY_TIER_UP=1`), for throughput over tail.
 * Kept longer, it made later turns' tail worse (p99 +0.35 ms and more
 * background compiling after 16,000 turns, with V8's default back after 5 s
 * of CPU), so the default comes back once the process has used
 * `grownUpCpu` of CPU time, about where the quicker warm-up ends at a
 * steady stream of turns (neutral after 16,000 turns), or after `youngFor`
 * at the latest: an agent seldom spoken to gains nothing from it.
 *
 * Set by the command line's own runs once the agent has started
 * (V8Flags.ts); left alone when node was started with its own
 * `--invocation-count-for-turbofan`. Unset or `0` keeps V8's default.
 */
import type * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { switchOf } from "../../config/ConfigRange.js"
import { V8EarlyTierUp } from "../../config/settings/Agent.js"
import { type During, setV8Flags } from "./V8Flags.js"

/** Unset or `0`: leave V8's tier-up pace alone; `1`: sooner while the process is young. */
export const EarlyTierUpConfig = switchOf(V8EarlyTierUp)

/** The flag both settings are of: Node 22's and 24's V8 (12.4, 13.6) accept it. */
const countFlag = "--invocation-count-for-turbofan"
/** A quarter of V8's default: hot code is optimised four times sooner. */
export const youngFlag = `${countFlag}=750`
/** V8's default on Node 22 and 24. */
export const defaultFlag = `${countFlag}=3000`
/** Process CPU time (all threads, start-up included) after which V8's default comes back. */
export const grownUpCpu = Duration.millis(2500)
/** How often the CPU time is read until then. */
export const checkEvery = Duration.millis(2500)
/** V8's default comes back after this long whatever the CPU time. */
export const youngFor = Duration.minutes(10)

export interface Probes {
  readonly setFlags: (flags: string) => Effect.Effect<void>
  /** CPU time the process has used so far. */
  readonly cpuUsed: Effect.Effect<Duration.Duration>
  /** Node's own command line (`process.execArgv`). */
  readonly execArgv: ReadonlyArray<string>
}

const live: Probes = {
  setFlags: setV8Flags,
  cpuUsed: Effect.sync(() => {
    const used = process.cpuUsage()
    return Duration.micros(BigInt(used.user + used.system))
  }),
  execArgv: process.execArgv
}

/**
 * Reads the setting (so a malformed value is refused at start-up with the
 * others). What it gives runs an effect (the agent's serving) with V8's
 * budget lowered at its start and set back to the default by a fiber beside
 * it once the process has used `grownUpCpu`, or after `youngFor`; that
 * fiber ends with the effect. Tests pass their own probes.
 */
export const readChoice = (probes: Probes = live): Effect.Effect<During, Config.ConfigError> =>
  Effect.map(EarlyTierUpConfig, (on): During => {
    const ownBudget = probes.execArgv.some((arg) => arg.startsWith(countFlag))
    return on && !ownBudget ? (effect) => youngThenDefault(probes, effect) : (effect) => effect
  })

const youngThenDefault = <A, E, R>(probes: Probes, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const grownUp = probes.cpuUsed.pipe(
    Effect.repeat({
      schedule: Schedule.spaced(checkEvery).pipe(Schedule.upTo({ duration: youngFor })),
      until: (used) => Duration.isGreaterThanOrEqualTo(used, grownUpCpu)
    }),
    Effect.flatMap((used) =>
      Effect.andThen(
        probes.setFlags(defaultFlag),
        Effect.logDebug(`V8's default optimising pace is back (${Duration.format(used)} of CPU used)`)
      )
    )
  )
  return Effect.andThen(
    Effect.andThen(
      probes.setFlags(youngFlag),
      Effect.logDebug(
        `V8 optimises hot code sooner until the process has used ${Duration.format(grownUpCpu)} of CPU ` +
          "(PLANCKCLAW_V8_EARLY_TIER_UP=1)"
      )
    ),
    Effect.scoped(Effect.andThen(Effect.forkScoped(grownUp), effect))
  )
}
