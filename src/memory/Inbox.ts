/**
 * A journal of messages accepted from a bridge and not yet finished, so a
 * run killed mid-turn answers them after restart (the original loses them).
 * Each message moves accepted → answered (reply decided) → delivered; one
 * whose exchange could not be stored (a full disk) stays, as `unstored`,
 * until it is (`stored`). The journal is emptied whenever nothing is left,
 * so it stays tiny. Each message carries a random key: the identity under
 * which history knows whether its exchange is stored (see memory/Ledger.ts).
 * The records and their replay are InboxJournal.ts, its descriptor
 * InboxJournalFile.ts. `run` answers a message the journal could not take;
 * serve refuses it (FileInbox.acceptJournaled).
 */
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { InboundMessage } from "../ports/Interact.js"
import {
  acceptedRecord,
  type Entry,
  fresh,
  isKept,
  journaledWhole,
  missingRecords,
  type Pending,
  replayEntries,
  updateEntry
} from "./InboxJournal.js"
import { MemoryConfig, MemoryError } from "./Memory.js"
import * as InboxJournalFile from "./InboxJournalFile.js"
import { newKey } from "./MessageKeys.js"
import * as SafeFile from "../runtime/SafeFile.js"
import * as SafeJournal from "../runtime/SafeJournal.js"

export { type Pending, replay } from "./InboxJournal.js"

/** A message to accept: from a bridge, or from the HTTP service with the caller's Idempotency-Key. */
export interface Accepting extends InboundMessage {
  readonly idempotencyKey?: string | undefined
}

export interface InboxService {
  /** Messages a previous run accepted and did not finish, oldest first. */
  readonly recovered: ReadonlyArray<Pending>
  readonly accept: (message: Accepting) => Effect.Effect<Pending>
  /**
   * Accepts several messages, in order, with one journal write. Present
   * where that is synchronous (a local file): the intake runs it in an
   * adapter's read callback (InteractService.keepOnRead).
   */
  readonly acceptAll?: (messages: ReadonlyArray<Accepting>) => Effect.Effect<ReadonlyArray<Pending>>
  readonly answered: (pending: Pending, reply: string, stored: boolean) => Effect.Effect<void>
  /**
   * The exchange could not be stored: it is kept until `stored`, even once
   * delivered. True when the inbox holds it whole (message and reply) where
   * a crash does not lose it: on disk.
   */
  readonly unstored: (pending: Pending, reply: string) => Effect.Effect<boolean>
  readonly stored: (pending: Pending) => Effect.Effect<void>
  /** Exchanges delivered but not stored yet, oldest first, each with its reply. */
  readonly backlog: Effect.Effect<ReadonlyArray<Pending>>
  readonly delivered: (pending: Pending) => Effect.Effect<void>
  /**
   * Closes a message its user cancelled before its reply was decided (a
   * Ctrl-C on the terminal): it is not answered at the next start, and
   * nothing of it is stored. Absent where no host receives cancels (the
   * PostgreSQL inbox of serve and the cluster, whose bridges send none);
   * Intake then closes it as delivered, which has the same effect.
   */
  readonly cancelled?: (pending: Pending) => Effect.Effect<void>
  /** Closes the journal's descriptor held between records; the next record opens it again (a host with many idle agents). */
  readonly closeFiles: Effect.Effect<void>
}

export class Inbox extends Context.Service<Inbox, InboxService>()("planckclaw/Inbox") {}

/** The journal file inbox, with what serve's agents need of it beyond InboxService (AgentInstance). */
export interface FileInbox extends InboxService {
  /** Accepts a message only once its `accepted` record is in the journal; else fails, keeping nothing of it. */
  readonly acceptJournaled: (message: Accepting) => Effect.Effect<Pending, MemoryError>
  /**
   * Delivered, but left in the journal as not yet delivered until `release`
   * (its Idempotency-Key could not be recorded: a restart finishes it again,
   * recording the key, instead of forgetting it). Writes nothing.
   */
  readonly deliveredKept: (pending: Pending) => Effect.Effect<void>
  readonly release: (pending: Pending) => Effect.Effect<void>
}

/** A journal write that failed for want of room (a full disk or quota, a file size limit). */
export const noRoom = (error: MemoryError): boolean =>
  error.cause instanceof SafeFile.MemoryFileFailed && ["ENOSPC", "EDQUOT", "EFBIG"].includes(error.cause.code ?? "")

/** The inbox, and how to close the journal's descriptor it holds. */
const open = (directory: string, madeNow: boolean): Effect.Effect<{ readonly service: FileInbox; readonly close: Effect.Effect<void> }, MemoryError> =>
  Effect.suspend(() => {
    const file = path.join(directory, ".inbox.jsonl")
    const refused = (error: SafeFile.MemoryFileError) =>
      new MemoryError({
        reason: error._tag === "MemoryFileRefused" ? "unwritable" : "io",
        message: `cannot read the inbox journal: ${error.message}`,
        cause: error
      })
    // Only a regular file of this user, never through a link; a torn last record is cut off.
    // A directory made just now has no journal yet: the first record makes it.
    const opened = madeNow ? Result.succeed(undefined) : SafeJournal.open(file)
    if (Result.isFailure(opened)) return Effect.fail(refused(opened.failure))
    const entries = replayEntries(opened.success?.text ?? "")
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

    // Nothing left: start the journal afresh instead of growing it (truncating needs no space).
    const resetOr = (record: object) =>
      Effect.suspend(() =>
        entries.size === 0
          ? outcome(truncate())
          : write(record)
      )

    const change = (id: number, next: (entry: Entry) => Entry | undefined) => updateEntry(entries, id, next)
    const newPending = (message: Accepting): Pending => ({
      id: nextId++,
      key: newKey(),
      ...(message.idempotencyKey === undefined ? {} : { idempotencyKey: message.idempotencyKey }),
      channel: message.channel,
      text: message.text,
      reply: Option.none()
    })
    /** The records that replay `entry` as it is now (a delivery kept back by `deliveredKept` is not one yet). */
    const recordsOf = (entry: Entry): Array<object> => [
      acceptedRecord(entry.pending),
      ...Option.match(entry.pending.reply, { onNone: () => [], onSome: (reply) => [{ answered: entry.pending.id, reply: reply.text, stored: reply.stored }] }),
      ...(entry.unstored ? [{ unstored: entry.pending.id }] : []),
      ...(entry.delivered && !entry.held ? [{ delivered: entry.pending.id }] : [])
    ]
    const journaledNow = (entry: Entry) => ({ journaled: true, answerJournaled: Option.isSome(entry.pending.reply), unstoredJournaled: entry.unstored })
    const replyOf = (entry: Entry) => Option.match(entry.pending.reply, { onNone: () => "", onSome: (reply) => reply.text })

    // A journal opened on a new file (the old one removed by hand) starts with every message still pending.
    const { append, truncate, drop } = InboxJournalFile.make(file, opened.success, {
      records: () => [...entries.values()].flatMap(recordsOf),
      kept: () => {
        for (const entry of [...entries.values()]) change(entry.pending.id, (kept) => ({ ...kept, ...journaledNow(kept) }))
      }
    })
    const write = (...records: ReadonlyArray<object>) => Effect.suspend(() => outcome(append(...records)))

    // Exchanges answered while neither history nor the journal took them live only in this process: at a stop,
    // written to the journal if there is room now, else said to be lost (never in silence). One whose message the
    // journal holds is answered again by the next start; its reply was not kept.
    const close = Effect.suspend(() => {
      let lost = 0
      let again = 0
      for (const entry of [...entries.values()]) {
        if (!entry.unstored || isKept(entry)) continue
        const delivered = entry.delivered && !entry.held ? [{ delivered: entry.pending.id }] : []
        if (Result.isSuccess(append(...missingRecords(entry, replyOf(entry)), ...delivered))) change(entry.pending.id, journaledWhole)
        else if (entry.journaled) again++
        else lost++
      }
      drop()
      if (lost === 0 && again === 0) return Effect.void
      const free = SafeFile.freeBytes(directory)
      return Effect.logError(
        `at this stop neither history.jsonl nor the inbox journal ${file} could take ${lost + again} exchange(s) answered ` +
          `meanwhile (${free ?? "unknown"} bytes free): ` +
          [lost > 0 ? `${lost} are lost with this stop` : "", again > 0 ? `${again} keep only their message, which the next start answers again` : ""]
            .filter((part) => part.length > 0).join("; ")
      )
    })

    const service: FileInbox = {
      recovered: [...entries.values()].filter((entry) => !entry.delivered).map((entry) => entry.pending),
      accept: (message) =>
        Effect.suspend(() => {
          const pending = newPending(message)
          const written = append(acceptedRecord(pending))
          entries.set(pending.id, fresh(pending, Result.isSuccess(written)))
          return outcome(written).pipe(Effect.as(pending))
        }),
      acceptAll: (messages) =>
        Effect.suspend(() => {
          const pendings = messages.map(newPending)
          const written = append(...pendings.map(acceptedRecord))
          for (const pending of pendings) entries.set(pending.id, fresh(pending, Result.isSuccess(written)))
          return outcome(written).pipe(Effect.as(pendings))
        }),
      acceptJournaled: (message) =>
        Effect.suspend(() => {
          const pending = newPending(message)
          const written = append(acceptedRecord(pending))
          if (Result.isSuccess(written)) {
            entries.set(pending.id, fresh(pending, true))
            return Effect.as(worked, pending)
          }
          const refusal = new MemoryError({ reason: "io", message: `cannot write the inbox journal: ${written.failure.message}`, cause: written.failure })
          return Effect.andThen(report(written.failure), Effect.fail(refusal))
        }),
      answered: (pending, reply, stored) =>
        Effect.suspend(() => {
          const written = append({ answered: pending.id, reply, stored })
          change(pending.id, (entry) => ({
            ...entry,
            pending: { ...entry.pending, reply: Option.some({ text: reply, stored }) },
            answerJournaled: Result.isSuccess(written)
          }))
          return outcome(written)
        }),
      unstored: (pending, reply) =>
        Effect.suspend(() => {
          const found = entries.get(pending.id)
          if (found?.unstored === true) return Effect.succeed(isKept(found))
          // Not journaled when accepted or answered (the disk was full then): what is missing now, in one write.
          const entry = found ?? fresh(pending, false)
          const written = append(...missingRecords(entry, reply))
          const waiting: Entry = { ...entry, pending: { ...pending, reply: Option.some({ text: reply, stored: true }) }, unstored: true }
          const kept = Result.isSuccess(written) ? journaledWhole(waiting) : waiting
          entries.set(pending.id, kept)
          return Effect.as(outcome(written), isKept(kept))
        }),
      stored: (pending) =>
        Effect.suspend(() => {
          // Most exchanges are stored on their first try: nothing to note.
          if (entries.get(pending.id)?.unstored !== true) return Effect.void
          change(pending.id, (entry) => entry.delivered && !entry.held ? undefined : { ...entry, unstored: false })
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
      cancelled: (pending) =>
        Effect.suspend(() => {
          change(pending.id, () => undefined)
          return resetOr({ cancelled: pending.id })
        }),
      deliveredKept: (pending) => Effect.sync(() => change(pending.id, (entry) => ({ ...entry, delivered: true, held: true }))),
      release: (pending) =>
        Effect.suspend(() => {
          if (entries.get(pending.id)?.held !== true) return Effect.void
          change(pending.id, (entry) => entry.unstored ? { ...entry, held: false } : undefined)
          return resetOr({ delivered: pending.id })
        }),
      closeFiles: Effect.sync(drop)
    }
    return Effect.succeed({ service, close })
  })

/** The inbox whose journal descriptor is closed with its scope. */
export const make = (
  directory: string,
  options: { readonly fresh?: boolean | undefined } = {}
): Effect.Effect<FileInbox, MemoryError, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(open(directory, options.fresh === true), (opened) => opened.close),
    (opened) => opened.service
  )

/** Scoped: releasing the layer (an agent released by the service) closes the journal. */
export const layer: Layer.Layer<Inbox, import("effect/Config").ConfigError | MemoryError> = Layer.effect(
  Inbox,
  Effect.flatMap(MemoryConfig, make)
)
