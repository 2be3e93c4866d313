/**
 * The inbox journal's records and their replay (Inbox.ts writes them): one
 * JSON record per line, each message moving accepted → answered → delivered,
 * with `unstored` / `stored` while its exchange waits for room in history,
 * or accepted → cancelled when its user cancelled it before a reply was
 * decided (a Ctrl-C on the terminal): a cancelled message is never answered.
 * A version that predates `cancelled` skips the record and answers it again.
 */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { madeOnFirstCall } from "../runtime/FirstCall.js"

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
    }), Schema.Struct({ answered: Schema.Number, reply: Schema.String, stored: Schema.Boolean }), Schema.Struct({ unstored: Schema.Number }), Schema.Struct({ stored: Schema.Number }), Schema.Struct({ delivered: Schema.Number }), Schema.Struct({ cancelled: Schema.Number })])
  return Schema.decodeUnknownOption(Schema.fromJsonString(Record))
})

export interface Entry {
  readonly pending: Pending
  readonly unstored: boolean
  readonly delivered: boolean
  /** Its `accepted` record is in the journal (a full disk may have refused it). */
  readonly journaled: boolean
  /** Its `answered` record (the reply) is in the journal. */
  readonly answerJournaled: boolean
  /** Its `unstored` record is in the journal. */
  readonly unstoredJournaled: boolean
  /** Delivered, but no `delivered` record yet (FileInbox.deliveredKept): the journal keeps it until `release`. */
  readonly held: boolean
}

/** A message just accepted; `journaled` once its `accepted` record is written. */
export const fresh = (pending: Pending, journaled: boolean): Entry => ({
  pending,
  unstored: false,
  delivered: false,
  journaled,
  answerJournaled: false,
  unstoredJournaled: false,
  held: false
})

export const acceptedRecord = (pending: Pending) => ({
  accepted: pending.id,
  key: pending.key,
  idempotencyKey: pending.idempotencyKey,
  channel: pending.channel,
  text: pending.text
})

/** An exchange waiting to be stored that the journal holds whole (message, reply, unstored): on disk. */
export const isKept = (entry: Entry): boolean => entry.journaled && entry.answerJournaled && entry.unstoredJournaled

/** The records an exchange waiting to be stored still lacks in the journal, to be written in one go. */
export const missingRecords = (entry: Entry, reply: string): Array<object> => [
  ...(entry.journaled ? [] : [acceptedRecord(entry.pending)]),
  ...(entry.journaled && entry.answerJournaled ? [] : [{ answered: entry.pending.id, reply, stored: true }]),
  { unstored: entry.pending.id }
]

/** The entry once `missingRecords` landed. */
export const journaledWhole = (entry: Entry): Entry => ({ ...entry, journaled: true, answerJournaled: true, unstoredJournaled: true })

/** Replaces the entry `id` by what `change` makes of it; undefined removes it; a missing entry stays missing. */
export const updateEntry = (entries: Map<number, Entry>, id: number, change: (entry: Entry) => Entry | undefined): void => {
  const entry = entries.get(id)
  if (entry === undefined) return
  const next = change(entry)
  if (next === undefined) entries.delete(id)
  else entries.set(id, next)
}

/** Replays the journal: every message not finished, in acceptance order. */
export const replayEntries = (text: string): Map<number, Entry> => {
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
      entries.set(value.accepted, fresh(pending, true))
    } else if ("answered" in value) {
      update(value.answered, (entry) => ({
        ...entry,
        pending: { ...entry.pending, reply: Option.some({ text: value.reply, stored: value.stored }) },
        answerJournaled: true
      }))
    } else if ("unstored" in value) {
      update(value.unstored, (entry) => ({ ...entry, unstored: true, unstoredJournaled: true }))
    } else if ("stored" in value) {
      update(value.stored, (entry) => entry.delivered ? undefined : { ...entry, unstored: false })
    } else if ("cancelled" in value) {
      update(value.cancelled, () => undefined)
    } else {
      update(value.delivered, (entry) => entry.unstored ? { ...entry, delivered: true } : undefined)
    }
  }
  // By id: a record written late (at a stop, once there was room again) does not move its message behind later ones.
  return new Map([...entries].sort(([a], [b]) => a - b))
}

/** What is still to be answered, in acceptance order. */
export const replay = (text: string): Array<Pending> =>
  [...replayEntries(text).values()].filter((entry) => !entry.delivered).map((entry) => entry.pending)

