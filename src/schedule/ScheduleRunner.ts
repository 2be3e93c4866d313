/**
 * Fires an agent's schedule: one fiber that reads schedules.json, hands
 * each entry due to `fire` once, records it (lastRun) and sleeps until the
 * next entry is due, a change is signalled (the schedule tool), or the next
 * look at the file (another process's `schedule add`). Time is the Clock's,
 * so tests drive it with TestClock.
 *
 * The grace rule: an entry due is fired for its latest occurrence only
 * (never a burst of the ones missed), and only when that occurrence is at
 * most `graceMs` old; an older one is skipped and logged. After downtime
 * this fires once at start what was missed within the grace period.
 * The occurrence is recorded before it is handed on: a crash in between
 * loses that one firing rather than repeating it.
 *
 * A clock that went back (it was ahead when an entry was created or last
 * fired, then set right) leaves those times in the future: they are set to
 * now, said once, and the entry fires at its next occurrence after now
 * rather than waiting for the clock to catch up.
 */
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Latch from "effect/Latch"
import { numberOf } from "../config/ConfigRange.js"
import { ScheduleGrace } from "../config/settings/Schedule.js"
import { type Entry, formatInstant as iso, isAheadOf, nextOf, occurrenceAfter, occurrenceAtOrBefore } from "./ScheduleEntry.js"
import * as ScheduleStore from "./ScheduleStore.js"

export interface RunnerOptions {
  /** What is fired: an agent's schedule (`fromStore`), or every agent's of the cluster at once. */
  readonly store: RunnerStore
  /** How old an occurrence may be and still fire (PLANCKCLAW_SCHEDULE_GRACE). */
  readonly graceMs: number
  /** How often the file is read again for changes made elsewhere. */
  readonly pollMs: number
  /** Hands the entry's message to the agent, for its occurrence at `occurrenceMs`. */
  readonly fire: (entry: Entry, occurrenceMs: number) => Effect.Effect<void>
  /**
   * Why the agent would refuse the entry's message at every firing (over its
   * PLANCKCLAW_MAX_MESSAGE_BYTES: an entry written by hand, or before the
   * limit was lowered), or undefined. Such an entry is warned of when it is
   * first read, not first at its firing; the others are not held back by it.
   */
  readonly refusedMessage?: ((entry: Entry) => string | undefined) | undefined
}

/** The entries a runner fires, and how it records a firing (false: already recorded, by another). */
export interface RunnerStore {
  readonly read: Effect.Effect<ReadonlyArray<Entry>, ScheduleStore.ScheduleError>
  readonly markRun: (id: string, occurrenceMs: number) => Effect.Effect<boolean, ScheduleStore.ScheduleError>
  /** Sets an entry's times later than `nowMs` to it (ScheduleStore.rewinding); false: not ahead (any more). */
  readonly rewind: (id: string, nowMs: number) => Effect.Effect<boolean, ScheduleStore.ScheduleError>
}

/** One agent's schedule as a runner's. */
export const fromStore = (store: ScheduleStore.Store): RunnerStore => ({
  read: store.read,
  markRun: (id, occurrenceMs) => store.modify(ScheduleStore.markingRun(id, occurrenceMs)),
  rewind: (id, nowMs) => store.modify(ScheduleStore.rewinding(id, nowMs))
})

/** A runner, and the signal that makes it read the file again at once. */
export interface Runner {
  readonly run: Effect.Effect<never>
  readonly changed: Effect.Effect<void>
}

const nextOrNone = (ms: number | undefined) => ms === undefined ? "none" : iso(ms)

/** One look at the schedule at `now`: each entry due fired or skipped; the next instant one is due. */
const pass = (options: RunnerOptions, now: number): Effect.Effect<number | undefined, ScheduleStore.ScheduleError> =>
  Effect.gen(function*() {
    const entries = yield* options.store.read
    let soonest: number | undefined
    const consider = (at: number | undefined) => {
      if (at !== undefined && (soonest === undefined || at < soonest)) soonest = at
    }
    for (const entry of entries) {
      if (isAheadOf(entry, now)) {
        // Recorded in the store, so said once (by the runner that set it right).
        if (yield* options.store.rewind(entry.id, now)) {
          const ahead = entry.lastRun !== undefined && Date.parse(entry.lastRun) > now ? `last run ${entry.lastRun}` : `creation ${entry.created}`
          yield* Effect.logWarning(
            `schedule ${entry.id}: its ${ahead} is later than now (${iso(now)}): the clock went back; ` +
              `it counts from now, next run ${nextOrNone(nextOf(entry, now))}`
          )
        }
        consider(nextOf(entry, now))
        continue
      }
      const due = nextOf(entry)
      if (due === undefined || due > now) {
        consider(due)
        continue
      }
      const created = Date.parse(entry.created)
      const latest = occurrenceAtOrBefore(entry.when, created, now) ?? due
      const recorded = yield* options.store.markRun(entry.id, latest)
      if (recorded) {
        if (now - latest <= options.graceMs) yield* options.fire(entry, latest)
        else {
          yield* Effect.logWarning(
            `schedule ${entry.id}: missed ${due === latest ? `its run at ${iso(latest)}` : `its runs from ${iso(due)} to ${iso(latest)}`}, ` +
              `older than the grace period (${options.graceMs / 1000} s, PLANCKCLAW_SCHEDULE_GRACE): skipped`
          )
        }
      }
      consider(occurrenceAfter(entry.when, created, latest))
    }
    return soonest
  })

/**
 * The entries' reads, each entry whose message the agent would refuse
 * (RunnerOptions.refusedMessage) warned of once: again only once its reason
 * changes, or after it was fixed and broken again.
 */
const warningRefused = (options: RunnerOptions): RunnerStore => {
  const refusedMessage = options.refusedMessage
  if (refusedMessage === undefined) return options.store
  const said = new Map<string, string>()
  const warn = (entries: ReadonlyArray<Entry>) =>
    Effect.suspend(() => {
      const refused = new Map<string, string>()
      for (const entry of entries) {
        const reason = refusedMessage(entry)
        if (reason !== undefined) refused.set(entry.id, reason)
      }
      const fresh = [...refused].filter(([id, reason]) => said.get(id) !== reason)
      said.clear()
      for (const [id, reason] of refused) said.set(id, reason)
      return Effect.forEach(fresh, ([id, reason]) =>
        Effect.logWarning(`schedule ${id}: ${reason}; the other entries fire as usual`), { discard: true })
    })
  return { ...options.store, read: Effect.tap(options.store.read, warn) }
}

/** A runner; `wake`, when given, is the latch a change is signalled on (shared with the schedule tool). */
export const make = (given: RunnerOptions, wake?: Latch.Latch): Effect.Effect<Runner> =>
  Effect.map(wake === undefined ? Latch.make(false) : Effect.succeed(wake), (wake) => {
    const options: RunnerOptions = { ...given, store: warningRefused(given) }
    // A schedule that cannot be used (a bad file) is said once, not at every look, and again once it changes.
    let said: string | undefined
    const refused = (message: string) =>
      message === said ? Effect.void : Effect.andThen(Effect.sync(() => void (said = message)), Effect.logError(`schedule not fired: ${message}`))
    // The latch is closed before the file is read: a change signalled during the pass wakes the next sleep.
    const iteration = Effect.gen(function*() {
      yield* wake.close
      const now = yield* Clock.currentTimeMillis
      const soonest = yield* pass(options, now).pipe(
        Effect.tap(() => Effect.sync(() => void (said = undefined))),
        Effect.catch((error) => Effect.as(refused(error.message), undefined))
      )
      const wait = Math.max(0, Math.min(options.pollMs, soonest === undefined ? options.pollMs : soonest - now))
      yield* Effect.raceFirst(Effect.sleep(Duration.millis(wait)), wake.await)
    })
    const loop: Effect.Effect<never> = Effect.forever(iteration)
    return { run: loop, changed: wake.open.pipe(Effect.asVoid) }
  })

/** Says that entry `name`'s occurrence at `occurrenceMs` is skipped, its run at `earlierMs` being still answered. */
export const skippedWhileAnswering = (name: string, earlierMs: number, occurrenceMs: number) =>
  Effect.logWarning(`schedule ${name}: its run at ${iso(earlierMs)} is still being answered: its run at ${iso(occurrenceMs)} is skipped`)

/**
 * Answers an entry's firings one occurrence at a time: `answering(key, name,
 * occurrenceMs, answer)` runs `answer` (the firing's whole turn, its reply
 * delivered) unless the entry `key` is still answering an earlier one (a
 * model slower than the entry, or unreachable for hours); that occurrence
 * is then skipped and said, naming the entry `name`, rather than queued
 * behind it: no backlog of the same message piles up to be answered in a burst.
 */
export const oneAtATime = () => {
  const answering = new Map<string, number>()
  return <R>(key: string, name: string, occurrenceMs: number, answer: Effect.Effect<void, never, R>): Effect.Effect<void, never, R> =>
    Effect.suspend(() => {
      const earlier = answering.get(key)
      if (earlier !== undefined) return skippedWhileAnswering(name, earlier, occurrenceMs)
      answering.set(key, occurrenceMs)
      return Effect.ensuring(answer, Effect.sync(() => void answering.delete(key)))
    })
}

/** PLANCKCLAW_SCHEDULE_GRACE, in milliseconds. */
export const GraceConfig = Config.map(numberOf(ScheduleGrace), (seconds) => seconds * 1000)
