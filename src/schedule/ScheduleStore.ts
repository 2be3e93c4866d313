/**
 * An agent's schedule: `schedules.json` in its memory directory, read and
 * decoded whole (a file that does not decode is refused with the file and
 * the reason, never half used), changed under a lock beside it by whoever
 * changes it (`schedule add` while a run fires entries), and replaced
 * through a temporary file and a rename, synced: what `add` answers as
 * stored is on disk.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as FileLock from "../memory/FileLock.js"
import * as SafeFile from "../runtime/SafeFile.js"
import { Entry, formatInstant, isAheadOf, problem, sizeProblem, type When } from "./ScheduleEntry.js"

export const FILE_NAME = "schedules.json"

/** The schedule file of the agent whose memory is `directory`. */
export const fileIn = (directory: string): string => path.join(directory, FILE_NAME)

export class ScheduleError extends Data.TaggedError("ScheduleError")<{
  /** BadFile: the file does not decode; Refused: the request; NotFound: no such id; Io: the disk. */
  readonly reason: "BadFile" | "Refused" | "NotFound" | "Io"
  readonly message: string
}> {}

const ScheduleFile = Schema.Struct({ entries: Schema.Array(Entry) })

const decodeFile = Schema.decodeUnknownResult(Schema.fromJsonString(ScheduleFile))
const formatIssue = SchemaIssue.makeFormatterDefault()

const badFile = (file: string, reason: string) =>
  new ScheduleError({ reason: "BadFile", message: `${file} is refused: ${reason} (fix or remove it)` })

const io = (file: string, error: SafeFile.MemoryFileError) =>
  new ScheduleError({ reason: "Io", message: `cannot use ${file}: ${error.message}` })

/** The entries of `text` (the file's content), or why the file is refused. */
export const decode = (file: string, text: string): Result.Result<ReadonlyArray<Entry>, ScheduleError> => {
  const decoded = decodeFile(text)
  if (Result.isFailure(decoded)) return Result.fail(badFile(file, formatIssue(decoded.failure.issue)))
  const seen = new Set<string>()
  for (const entry of decoded.success.entries) {
    const wrong = problem(entry)
    if (wrong !== undefined) return Result.fail(badFile(file, `entry ${entry.id}: ${wrong}`))
    if (seen.has(entry.id)) return Result.fail(badFile(file, `two entries have the id ${entry.id}`))
    seen.add(entry.id)
  }
  return Result.succeed(decoded.success.entries)
}

/** The entries as the file (or the cluster's row) holds them. */
export const encode = (entries: ReadonlyArray<Entry>) => `${JSON.stringify({ entries }, null, 2)}\n`

/** The entries of the schedule file; none when there is no file. */
export const read = (file: string): Effect.Effect<ReadonlyArray<Entry>, ScheduleError> =>
  // Suspended: the file is read each time the effect runs (a runner's every pass), not once when it is made.
  Effect.suspend(() => {
    const text = SafeFile.read(file)
    if (Result.isFailure(text)) return Effect.fail(io(file, text.failure))
    return text.success === undefined ? Effect.succeed([]) : Effect.fromResult(decode(file, text.success))
  })


/**
 * Changes the schedule under its lock: `change` gets the entries on disk
 * and returns the new ones (unchanged when it returns the same array) and
 * its answer, which is given once the new file is synced.
 */
export const modify = <A>(file: string, change: Change<A>): Effect.Effect<A, ScheduleError> =>
  Effect.scoped(Effect.gen(function*() {
    // A new home's memory directory may not exist yet: made as the agent would make it (private).
    yield* Effect.mapError(
      Effect.fromResult(Result.try({ try: () => fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 }), catch: (error) => SafeFile.failed(path.dirname(file), error) })),
      (error) => io(file, error)
    )
    yield* Effect.mapError(FileLock.holdWaiting(`${file}.lock`), (error) =>
      new ScheduleError({ reason: "Io", message: `cannot lock ${file}: ${error.message}` }))
    const entries = yield* read(file)
    const changed = yield* Effect.fromResult(change(entries))
    if (changed.entries !== entries) {
      yield* Effect.mapError(Effect.fromResult(SafeFile.replace(file, encode(changed.entries), true)), (error) => io(file, error))
    }
    return changed.value
  }))

/** What `add` is given: the entry without its id and creation time. */
export interface Draft {
  readonly when: When
  readonly text: string
  readonly to: string
}

/** A new id: 8 lowercase hex digits, not among `taken`. */
const newId = (taken: ReadonlyArray<Entry>): string => {
  for (;;) {
    const id = crypto.randomBytes(4).toString("hex")
    if (!taken.some((entry) => entry.id === id)) return id
  }
}

/** A change of the entries: the new entries (the same array when unchanged) and its answer, or a refusal. */
export type Change<A> = (
  entries: ReadonlyArray<Entry>
) => Result.Result<{ readonly entries: ReadonlyArray<Entry>; readonly value: A }, ScheduleError>

/** Where an agent's schedule is kept: its file (here), or a row of the cluster's database (hosts/cluster). */
export interface Store {
  readonly read: Effect.Effect<ReadonlyArray<Entry>, ScheduleError>
  readonly modify: <A>(change: Change<A>) => Effect.Effect<A, ScheduleError>
}

/** The schedule in the file `file`. */
export const fileStore = (file: string): Store => ({ read: read(file), modify: (change) => modify(file, change) })

/**
 * Adds an entry made at `nowMs`; the entry as stored. `maxMessageBytes` is
 * the limit of the agent that fires it (PLANCKCLAW_MAX_MESSAGE_BYTES): a
 * message over it is refused now, not at every firing.
 */
export const adding = (draft: Draft, nowMs: number, maxMessageBytes: number): Change<Entry> => (entries) => {
  if (draft.text.trim() === "") return Result.fail(new ScheduleError({ reason: "Refused", message: "the message is empty" }))
  // Whole seconds: intervals count from it, and the list reads better.
  const created = formatInstant(Math.floor(nowMs / 1000) * 1000)
  const entry: Entry = { id: newId(entries), when: draft.when, text: draft.text, to: draft.to, created }
  const wrong = problem(entry) ?? sizeProblem(entry, maxMessageBytes)
  return wrong !== undefined
    ? Result.fail(new ScheduleError({ reason: "Refused", message: wrong }))
    : Result.succeed({ entries: [...entries, entry], value: entry })
}

/** Removes the entry `id`; the entry removed. `where` names the schedule in the refusal. */
export const removing = (id: string, where: string): Change<Entry> => (entries) => {
  const found = entries.find((entry) => entry.id === id)
  return found === undefined
    ? Result.fail(new ScheduleError({ reason: "NotFound", message: `no schedule entry ${id} in ${where}` }))
    : Result.succeed({ entries: entries.filter((entry) => entry !== found), value: found })
}

/**
 * Records that entry `id` fired for (or skipped past) the occurrence at
 * `occurrenceMs`: a single time is then removed, being done. False when the
 * entry is gone or already past that occurrence (another process fired it).
 */
export const markingRun = (id: string, occurrenceMs: number): Change<boolean> => (entries) => {
  const found = entries.find((entry) => entry.id === id)
  if (found === undefined || (found.lastRun !== undefined && Date.parse(found.lastRun) >= occurrenceMs)) {
    return Result.succeed({ entries, value: false })
  }
  const next = found.when._tag === "At"
    ? entries.filter((entry) => entry !== found)
    : entries.map((entry) => entry === found ? { ...entry, lastRun: formatInstant(occurrenceMs) } : entry)
  return Result.succeed({ entries: next, value: true })
}

/**
 * Sets entry `id`'s creation and last run, when later than `nowMs`
 * (isAheadOf: written while the clock was ahead), to `nowMs`: it counts
 * from now, firing at its next occurrence after it, not once per
 * occurrence the clock skipped. False when the entry is gone or no longer
 * ahead (another process set it right).
 */
export const rewinding = (id: string, nowMs: number): Change<boolean> => (entries) => {
  const found = entries.find((entry) => entry.id === id)
  if (found === undefined || !isAheadOf(found, nowMs)) return Result.succeed({ entries, value: false })
  const now = formatInstant(nowMs)
  // Created is kept to whole seconds (adding), as intervals count from it.
  const created = Date.parse(found.created) > nowMs ? formatInstant(Math.floor(nowMs / 1000) * 1000) : found.created
  const rewound: Entry = found.lastRun !== undefined && Date.parse(found.lastRun) > nowMs
    ? { ...found, created, lastRun: now }
    : { ...found, created }
  return Result.succeed({ entries: entries.map((entry) => entry === found ? rewound : entry), value: true })
}

export const add = (file: string, draft: Draft, nowMs: number, maxMessageBytes: number): Effect.Effect<Entry, ScheduleError> =>
  modify(file, adding(draft, nowMs, maxMessageBytes))

export const remove = (file: string, id: string): Effect.Effect<Entry, ScheduleError> => modify(file, removing(id, file))

export const markRun = (file: string, id: string, occurrenceMs: number): Effect.Effect<boolean, ScheduleError> =>
  modify(file, markingRun(id, occurrenceMs))
