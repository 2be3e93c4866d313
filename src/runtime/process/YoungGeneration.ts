/**
 * V8's young generation kept small for a long-running agent.
 *
 * V8 grows its young generation (two semi-spaces) while many objects
 * survive scavenges, up to a maximum its version chooses: 16 MiB a
 * semi-space on Node 22, 32 MiB on Node 24. The agent's turns get it there
 * within a few thousand turns, its pages stay resident, and V8 sizes the old
 * generation's growth after it: a `planckclaw run` held 148 MiB after 30,000
 * FIFO turns on Node 24 against 115 MiB on Node 22 (bench/run-memory.mjs).
 * Stopped at 16 MiB in all (8 MiB a semi-space), the same run held 101 MiB
 * on Node 24 and 112 MiB on Node 22; stopped at 32 MiB, 127 MiB on Node 24.
 * On Node 24, main-thread CPU and p50 per turn were the same either way
 * (bench/ab-p99.mjs, 6 paired runs of 4,000 turns: −1.3 µs, −0.005 ms; the
 * p99, on a busy machine, +0.15 ms).
 *
 * Only on a V8 whose default is the larger one (Node 24's): on Node 22 the
 * cap takes the young generation below V8's own size, and the FIFO turn's
 * CPU against the Effect 3 build read ×1.17 with it, ×0.93 without
 * (bench/compare.mjs, one quiet run each; paired runs had read −0.9 µs).
 *
 * `--max-semi-space-size` only counts on node's command line, which costs
 * every start (V8Flags.ts). What V8 reads at each growth is its growth
 * factor: while the young generation is at `capBytes` (checked after each
 * collection, through Node's performance observer), the factor is 1, so it
 * grows no further; once V8 has shrunk it (a quiet process), the factor is
 * V8's own again, so it can grow back to the cap. `PLANCKCLAW_V8_YOUNG_GENERATION_CAP=0` keeps
 * V8's choice; a `--max-semi-space-size` or `--semi-space-growth-factor` of
 * your own on node's command line (or NODE_OPTIONS) is left alone. Set by the
 * command line's own runs once the agent has started, never by a Layer an
 * embedding application builds.
 */
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import { switchOf } from "../../config/ConfigRange.js"
import { V8YoungGenerationCap } from "../../config/settings/Agent.js"
import { type During, setV8Flags } from "./V8Flags.js"

/** Unset or `1`: the run stops the young generation at `capBytes`; `0`: V8's own choice. */
export const YoungGenerationConfig = switchOf(V8YoungGenerationCap)

/** The young generation's size (both semi-spaces, as V8 reports it) past which it grows no further. */
export const capBytes = 16 * 1024 * 1024

/** The flag V8 reads at each growth of the young generation: 1 grows it no further. */
export const noGrowthFlag = "--semi-space-growth-factor=1"

const ownFlags = ["--max-semi-space-size", "--semi-space-growth-factor"]

/** What the cap reads of the process; tests pass their own. */
export interface Probes {
  readonly setFlags: (flags: string) => Effect.Effect<void>
  /** The young generation's size now, in bytes. */
  readonly youngBytes: () => number
  /** Calls `listener` after each garbage collection until the returned function is called. */
  readonly afterEachCollection: (listener: () => void) => () => void
  /** Node's options: its command line and NODE_OPTIONS. */
  readonly nodeOptions: ReadonlyArray<string>
  /** V8's major version (12 on Node 22, 13 on Node 24). */
  readonly v8Major: number
}

const live = (): Probes => ({
  setFlags: setV8Flags,
  youngBytes: () => {
    // Loaded once the agent has started (as V8Flags loads node:v8), never at the start itself.
    const v8 = process.getBuiltinModule("node:v8")
    return v8.getHeapSpaceStatistics().find((space) => space.space_name === "new_space")?.space_size ?? 0
  },
  afterEachCollection: (listener) => {
    const { PerformanceObserver } = process.getBuiltinModule("node:perf_hooks")
    const observer = new PerformanceObserver(listener)
    observer.observe({ entryTypes: ["gc"] })
    return () => observer.disconnect()
  },
  nodeOptions: [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)],
  v8Major: Number(process.versions.v8.split(".")[0])
})

/** The first V8 whose young generation grows past 32 MiB by default (Node 24's); Node 22's stops there. */
const largerYoungFrom = 13

/** V8's own growth factor (`--semi-space-growth-factor`'s default): set back once V8 has shrunk the young generation. */
export const growthFlag = "--semi-space-growth-factor=2"

/**
 * After each collection, whether the young generation is at `capBytes` or
 * more (true) or back under it (false), each change once, for as long as
 * the returned effect runs. V8 shrinks the young generation when the
 * process goes quiet (its memory reducer); a growth factor left at 1 would
 * then hold it at its smallest for good, and every later turn would pay
 * many small collections (a `serve` after its first quiet minute scavenged
 * every 0.6 MiB instead of every 16).
 */
const capChanges = (probes: Probes, apply: (capped: boolean, size: number) => Effect.Effect<void>): Effect.Effect<never> =>
  Effect.flatMap(Queue.sliding<readonly [boolean, number]>(8), (changes) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        let capped = false
        return probes.afterEachCollection(() => {
          const size = probes.youngBytes()
          if ((size >= capBytes) === capped) return
          capped = !capped
          Queue.offerUnsafe(changes, [capped, size])
        })
      }),
      () => Effect.forever(Effect.flatMap(Queue.take(changes), ([capped, size]) => apply(capped, size))),
      (stopListening) => Effect.sync(stopListening)
    ))

/**
 * Reads the setting (so a malformed value is refused at start-up with the
 * others). What it gives runs an effect (the agent's serving) with a fiber
 * beside it that stops the young generation's growth whenever it is at
 * `capBytes`, and lets it grow again once V8 has shrunk it; that fiber ends
 * with the effect.
 */
export const readChoice = (probes: Probes = live()): Effect.Effect<During, Config.ConfigError> =>
  Effect.map(YoungGenerationConfig, (on): During => {
    const ownSize = probes.nodeOptions.some((option) => ownFlags.some((flag) => option.startsWith(flag)))
    if (!on || ownSize || probes.v8Major < largerYoungFrom) return (effect) => effect
    const cap = capChanges(probes, (capped, size) =>
      Effect.andThen(
        probes.setFlags(capped ? noGrowthFlag : growthFlag),
        Effect.logDebug(
          capped
            ? `V8's young generation grows no further (${Math.round(size / 1048576)} MiB; ` +
              "PLANCKCLAW_V8_YOUNG_GENERATION_CAP=0 keeps V8's choice)"
            : `V8 shrank its young generation (${Math.round(size / 1048576)} MiB): it may grow again, up to the cap`
        )
      ))
    return (effect) => Effect.scoped(Effect.andThen(Effect.forkScoped(cap), effect))
  })
