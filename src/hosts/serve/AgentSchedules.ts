/**
 * An agent's schedule as the host shows it (GET /v1/agents/{id}/schedules,
 * the console): each entry of its schedules.json as written, with its last
 * run and its next one (ScheduleEntry.nextOf: the occurrence after the last
 * run, or after its creation, counted from now when those are later than now
 * (the clock went back), as `schedule list` and the runner count). Read,
 * never changed: the runner keeps it.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as ScheduleEntry from "../../schedule/ScheduleEntry.js"
import * as ScheduleStore from "../../schedule/ScheduleStore.js"

export interface ScheduleView {
  readonly id: string
  readonly when: ScheduleEntry.When
  /** `when` in the words of `schedule add` / `schedule list`. */
  readonly written: string
  readonly text: string
  readonly to: string
  readonly created: string
  readonly lastRun: string | null
  /** Null once a single time has fired (it is then removed) or when a cron matches no date. */
  readonly nextRun: string | null
}

export interface ScheduleList {
  readonly entries: ReadonlyArray<ScheduleView>
}

/** `entry` as shown at `nowMs`. */
export const viewOf = (entry: ScheduleEntry.Entry, nowMs: number): ScheduleView => {
  const next = ScheduleEntry.nextOf(entry, nowMs)
  return {
    id: entry.id,
    when: entry.when,
    written: ScheduleEntry.describeWhen(entry.when),
    text: entry.text,
    to: entry.to,
    created: entry.created,
    lastRun: entry.lastRun ?? null,
    nextRun: next === undefined ? null : ScheduleEntry.formatInstant(next)
  }
}

/** The schedule a store holds (its file, or the cluster's row), shown. */
export const listOf = (store: ScheduleStore.Store): Effect.Effect<ScheduleList, ScheduleStore.ScheduleError> =>
  Effect.flatMap(store.read, (entries) =>
    Effect.map(Clock.currentTimeMillis, (now) => ({ entries: entries.map((entry) => viewOf(entry, now)) })))

/** The schedule of the agent whose directory is `directory`: none without a schedules.json; a file that does not decode is refused with its path and reason. */
export const schedulesOf = (directory: string): Effect.Effect<ScheduleList, ScheduleStore.ScheduleError> =>
  listOf(ScheduleStore.fileStore(ScheduleStore.fileIn(directory)))
