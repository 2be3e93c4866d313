/**
 * A journal of messages accepted from a bridge and not yet finished, so a
 * run killed mid-turn answers them after restart (the original loses them).
 * Each message moves accepted → answered (reply decided) → delivered; one
 * whose exchange could not be stored (a full disk) stays, as `unstored`,
 * until it is (`stored`). The journal is emptied whenever nothing is left,
 * so it stays tiny. Each message carries a random key: the identity under
 * which history knows whether its exchange is stored (see memory/Ledger.ts).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { madeOnFirstCall } from "../FirstCall.js"
import type { InboundMessage } from "../Interact.js"
import { MemoryConfig, MemoryError } from "./Memory.js"
import { newKey } from "./MessageKeys.js"
import * as SafeFile from "./SafeFile.js"

export interface Pending {
  readonly id: number
  /** Unique across runs (ids start over when the journal empties); absent in journals of older versions. */
  readonly key?: string
  /** The caller's Idempotency-Key (the HTTP service), journaled with the message; absent in older journals. */
  readonly idempotencyKey?: string
  readonly channel: string
  readonly text: string
  /** Set once the reply is decided; `stored` says whether the exchange goes to history. */
  readonly reply: Option.Option<{ readonly text: string; readonly stored: boolean }>
}

/** A journal line's record; its schema and decoder are made at the first line a journal has, not at every start. */
const decodeRecord = madeOnFirstCall(() => {
  const Record = Schema.Union([Schema.Struct({
      accepted: Schema.Number,
      key: Schema.optional(Schema.String),
      idempotencyKey: Schema.optional(Schema.String),
      channel: Schema.String,
      text: Schema.String
    }), Schema.Struct({ answered: Schema.Number, reply: Schema.String, stored: Schema.Boolean }), Schema.Struct({ unstored: Schema.Number }), Schema.Struct({ stored: Schema.Number }), Schema.Struct({ delivered: Schema.Number })])
  return Schema.decodeUnknownOption(Schema.fromJsonString(Record))
})

/** A message to accept: from a bridge, or from the HTTP service with the caller's Idempotency-Key. */
export interface Accepting extends InboundMessage {
  readonly idempotencyKey?: string | undefined
}

export interface InboxService {
  /** Messages a previous run accepted and did not finish, oldest first. */
  readonly recovered: ReadonlyArray<Pending>
  readonly accept: (message: Accepting) => Effect.Effect<Pending>
  readonly answered: (pending: Pending, reply: string, stored: boolean) => Effect.Effect<void>
  /** The exchange could not be stored: it is kept until `stored`, even once delivered. */
  readonly unstored: (pending: Pending, reply: string) => Effect.Effect<void>
  readonly stored: (pending: Pending) => Effect.Effect<void>
  /** Exchanges delivered but not stored yet, oldest first, each with its reply. */
  readonly backlog: Effect.Effect<ReadonlyArray<Pending>>
  readonly delivered: (pending: Pending) => Effect.Effect<void>
  /** Closes the journal's descriptor held between records; the next record opens it again (a host with many idle agents). */
  readonly closeFiles: Effect.Effect<void>
}

export class Inbox extends Context.Service<Inbox, InboxService>()("planckclaw/Inbox") {}

interface Entry {
  readonly pending: Pending
  readonly unstored: boolean
  readonly delivered: boolean
  /** Its `accepted` record is in the journal (a full disk may have refused it). */
  readonly journaled: boolean
}

/** Replaces the entry `id` by what `change` makes of it; undefined removes it; a missing entry stays missing. */
const updateEntry = (entries: Map<number, Entry>, id: number, change: (entry: Entry) => Entry | undefined): void => {
  const entry = entries.get(id)
  if (entry === undefined) return
  const next = change(entry)
  if (next === undefined) entries.delete(id)
  else entries.set(id, next)
}

/** Replays the journal: every message not finished, in acceptance order. */
const replayEntries = (text: string): Map<number, Entry> => {
  const entries = new Map<number, Entry>()
  const update = (id: number, change: (entry: Entry) => Entry | undefined) => updateEntry(entries, id, change)
  for (const line of text.split("\n")) {
    // No record, as the decoder would say too: an empty journal is one empty line, and a start need not make the decoder for it.
    if (line === "") continue
    const record = decodeRecord(line)
    if (Option.isNone(record)) continue
    const value = record.value
    if ("accepted" in value) {
      const pending: Pending = {
        id: value.accepted,
        ...(value.key === undefined ? {} : { key: value.key }),
        ...(value.idempotencyKey === undefined ? {} : { idempotencyKey: value.idempotencyKey }),
        channel: value.channel,
        text: value.text,
        reply: Option.none()
      }
      entries.set(value.accepted, { pending, unstored: false, delivered: false, journaled: true })
    } else if ("answered" in value) {
      update(value.answered, (entry) => ({
        ...entry,
        pending: { ...entry.pending, reply: Option.some({ text: value.reply, stored: value.stored }) }
      }))
    } else if ("unstored" in value) {
      update(value.unstored, (entry) => ({ ...entry, unstored: true }))
    } else if ("stored" in value) {
      update(value.stored, (entry) => entry.delivered ? undefined : { ...entry, unstored: false })
    } else {
      update(value.delivered, (entry) => entry.unstored ? { ...entry, delivered: true } : undefined)
    }
  }
  return entries
}

/** What is still to be answered, in acceptance order. */
export const replay = (text: string): Array<Pending> =>
  [...replayEntries(text).values()].filter((entry) => !entry.delivered).map((entry) => entry.pending)

/** The inbox, and how to close the journal's descriptor it holds. */
const open = (directory: string): Effect.Effect<{ readonly service: InboxService; readonly close: () => void }, MemoryError> =>
  Effect.suspend(() => {
    const file = path.join(directory, ".inbox.jsonl")
    const refused = (error: SafeFile.MemoryFileError) =>
      new MemoryError({
        reason: error._tag === "MemoryFileRefused" ? "unwritable" : "io",
        message: `cannot read the inbox journal: ${error.message}`,
        cause: error
      })
    // Only a regular file of this user, never through a link; a torn last record is cut off.
    const opened = SafeFile.readJournal(file)
    if (Result.isFailure(opened)) return Effect.fail(refused(opened.failure))
    const entries = replayEntries(opened.success)
    let nextId = [...entries.keys()].reduce((max, id) => Math.max(max, id), 0) + 1
    let failing = false

    // Journal failures (disk full, permissions) are loud, once, but never lose
    // the message in this process: it is still answered, only not crash-safe.
    const report = (error: SafeFile.MemoryFileError) =>
      Effect.suspend(() => {
        if (failing) return Effect.void
        failing = true
        const free = SafeFile.freeBytes(directory)
        return Effect.logError(
          `cannot write the inbox journal: ${error.message}; ${free ?? "unknown"} bytes free (logged once until it works again)`
        )
      })
    const worked = Effect.suspend(() => {
      if (!failing) return Effect.void
      failing = false
      return Effect.logInfo(`the inbox journal ${file} is writable again`)
    })
    const outcome = (result: Result.Result<void, SafeFile.MemoryFileError>) =>
      Result.match(result, { onFailure: report, onSuccess: () => worked })

    // One descriptor for the run (O_APPEND, checked once when opened): each
    // record is one write(2), emptying is one ftruncate(2). The run lock
    // (MemoryHold.ts: a run's, or a started agent's in serve) makes this
    // process the journal's only writer, so its size is
    // known here, for cutting back a write that did not land whole.
    let journal: { readonly fd: number; size: number } | undefined
    const held = (): Result.Result<{ readonly fd: number; size: number }, SafeFile.MemoryFileError> => {
      if (journal !== undefined) return Result.succeed(journal)
      return Result.map(SafeFile.openWithStat(file, SafeFile.flags.append), ({ fd, stat }) => {
        journal = { fd, size: stat.size }
        return journal
      })
    }
    /** After a failure the descriptor is dropped: the next record opens (and checks) the file again. */
    const drop = () => {
      if (journal !== undefined) Result.try(() => fs.closeSync(journal!.fd))
      journal = undefined
    }
    const append = (...records: ReadonlyArray<object>): Result.Result<void, SafeFile.MemoryFileError> =>
      Result.flatMap(held(), (target) => {
        const text = records.map((record) => `${JSON.stringify(record)}\n`).join("")
        const bytes = Buffer.from(text, "utf8")
        const written = SafeFile.appendAll(target.fd, file, bytes, target.size)
        if (Result.isSuccess(written)) target.size += bytes.length
        else drop()
        return written
      })
    const truncate = (): Result.Result<void, SafeFile.MemoryFileError> =>
      Result.flatMap(held(), (target) => {
        const cut = Result.try({ try: () => fs.ftruncateSync(target.fd, 0), catch: (error) => SafeFile.failed(file, error) })
        if (Result.isSuccess(cut)) target.size = 0
        else drop()
        return cut
      })
    const write = (...records: ReadonlyArray<object>) => Effect.suspend(() => outcome(append(...records)))
    const acceptedRecord = (pending: Pending) => ({
      accepted: pending.id,
      key: pending.key,
      idempotencyKey: pending.idempotencyKey,
      channel: pending.channel,
      text: pending.text
    })

    // Nothing left: start the journal afresh instead of growing it (truncating needs no space).
    const resetOr = (record: object) =>
      Effect.suspend(() =>
        entries.size === 0
          ? outcome(truncate())
          : write(record)
      )

    const change = (id: number, next: (entry: Entry) => Entry | undefined) => updateEntry(entries, id, next)

    const service: InboxService = {
      recovered: [...entries.values()].filter((entry) => !entry.delivered).map((entry) => entry.pending),
      accept: (message) =>
        Effect.suspend(() => {
          const pending: Pending = {
            id: nextId++,
            key: newKey(),
            ...(message.idempotencyKey === undefined ? {} : { idempotencyKey: message.idempotencyKey }),
            channel: message.channel,
            text: message.text,
            reply: Option.none()
          }
          const written = append(acceptedRecord(pending))
          entries.set(pending.id, { pending, unstored: false, delivered: false, journaled: Result.isSuccess(written) })
          return outcome(written).pipe(Effect.as(pending))
        }),
      answered: (pending, reply, stored) =>
        Effect.suspend(() => {
          change(pending.id, (entry) => ({ ...entry, pending: { ...entry.pending, reply: Option.some({ text: reply, stored }) } }))
          return write({ answered: pending.id, reply, stored })
        }),
      unstored: (pending, reply) =>
        Effect.suspend(() => {
          const entry = entries.get(pending.id)
          if (entry?.unstored === true) return Effect.void
          const journaled = entry?.journaled ?? false
          // Not journaled when accepted (the disk was full then): the whole exchange now, in one write.
          const records = journaled
            ? [{ unstored: pending.id }]
            : [acceptedRecord(pending), { answered: pending.id, reply, stored: true }, { unstored: pending.id }]
          const written = append(...records)
          entries.set(pending.id, {
            pending: { ...pending, reply: Option.some({ text: reply, stored: true }) },
            unstored: true,
            delivered: entry?.delivered ?? false,
            journaled: journaled || Result.isSuccess(written)
          })
          return outcome(written)
        }),
      stored: (pending) =>
        Effect.suspend(() => {
          // Most exchanges are stored on their first try: nothing to note.
          if (entries.get(pending.id)?.unstored !== true) return Effect.void
          change(pending.id, (entry) => entry.delivered ? undefined : { ...entry, unstored: false })
          return resetOr({ stored: pending.id })
        }),
      backlog: Effect.sync(() =>
        [...entries.values()].filter((entry) => entry.delivered && entry.unstored).map((entry) => entry.pending)
      ),
      delivered: (pending) =>
        Effect.suspend(() => {
          change(pending.id, (entry) => entry.unstored ? { ...entry, delivered: true } : undefined)
          return resetOr({ delivered: pending.id })
        }),
      closeFiles: Effect.sync(drop)
    }
    return Effect.succeed({ service, close: drop })
  })

/** The inbox whose journal descriptor is closed with its scope. */
export const make = (directory: string): Effect.Effect<InboxService, MemoryError, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(open(directory), (opened) => Effect.sync(opened.close)),
    (opened) => opened.service
  )

/** Scoped: releasing the layer (an agent released by the service) closes the journal. */
export const layer: Layer.Layer<Inbox, import("effect/Config").ConfigError | MemoryError> = Layer.effect(
  Inbox,
  Effect.flatMap(MemoryConfig, make)
)
