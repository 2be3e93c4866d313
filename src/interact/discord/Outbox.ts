/**
 * The Discord bridge's outbox: every reply it has taken from the agent and
 * Discord has not yet accepted whole, journaled in `.discord-outbox.jsonl`
 * beside the memory (PLANCKCLAW_DIR). A reply is journaled with its parts
 * already cut, each with the nonce it is always sent with, and the question
 * it answers; each part Discord accepts is noted. After a stop or a crash the
 * replay gives the replies still owed, with only the parts not yet accepted,
 * so a reply is sent once and a reply cut between parts resumes where it
 * stopped. A nonce kept across restarts lets Discord drop a part that did
 * arrive just before the crash.
 *
 * Records, one JSON object a line: `{queued, channel, parts, target?, at}`,
 * `{sent, part}`, `{finished}` (all parts accepted, or given up). The file is
 * emptied whenever nothing is owed, so it stays tiny. One bridge per memory
 * directory writes it (the run lock); a torn last line is cut off on open.
 * A journal that cannot be written is logged once; replies still go out,
 * only not crash-safe.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as SafeFile from "../../memory/SafeFile.js"
import type { ReplyTarget } from "./ReplyTargets.js"

export const outboxFileName = ".discord-outbox.jsonl"

export interface Part {
  readonly content: string
  readonly nonce: string
}

/** A reply owed to a channel. */
export interface Owed {
  readonly id: number
  readonly channel: string
  readonly parts: ReadonlyArray<Part>
  /** Parts Discord has accepted, from the first: the next to send is `parts[sent]`. */
  readonly sent: number
  readonly target: Option.Option<ReplyTarget>
  /** When the bridge took it (epoch ms). */
  readonly at: number
}

const TargetSchema = Schema.Union([Schema.Struct({ _tag: Schema.Literal("Message"), messageId: Schema.String }), Schema.Struct({
    _tag: Schema.Literal("Interaction"),
    applicationId: Schema.String,
    interactionId: Schema.String,
    token: Schema.String
  })])
const RecordSchema = Schema.Union([Schema.Struct({
    queued: Schema.Number,
    channel: Schema.String,
    parts: Schema.Array(Schema.Struct({ content: Schema.String, nonce: Schema.String })),
    target: Schema.optional(TargetSchema),
    at: Schema.Number
  }), Schema.Struct({ sent: Schema.Number, part: Schema.Number }), Schema.Struct({ finished: Schema.Number })])
const decodeRecord = Schema.decodeUnknownOption(Schema.parseJson(RecordSchema))

/** Replays a journal: the replies still owed, in the order they were taken. */
export const replay = (text: string): Array<Owed> => {
  const owed = new Map<number, Owed>()
  for (const line of text.split("\n")) {
    const record = decodeRecord(line)
    if (Option.isNone(record)) continue
    const value = record.value
    if ("queued" in value) {
      owed.set(value.queued, {
        id: value.queued,
        channel: value.channel,
        parts: value.parts,
        sent: 0,
        target: Option.fromNullishOr(value.target),
        at: value.at
      })
    } else if ("sent" in value) {
      const entry = owed.get(value.sent)
      if (entry !== undefined) owed.set(entry.id, { ...entry, sent: Math.max(entry.sent, value.part + 1) })
    } else {
      owed.delete(value.finished)
    }
  }
  return [...owed.values()].filter((entry) => entry.sent < entry.parts.length)
}

export interface Outbox {
  /** Replies a previous run took and Discord did not accept whole, oldest first. */
  readonly recovered: ReadonlyArray<Owed>
  /** Journals a new reply; once this returns, it survives a crash. */
  readonly queue: (reply: Omit<Owed, "id" | "sent">) => Effect.Effect<Owed>
  /** Discord accepted part `index` of the reply. */
  readonly partSent: (owed: Owed, index: number) => Effect.Effect<void>
  /** The reply is done with: delivered whole, or given up. */
  readonly finished: (owed: Owed) => Effect.Effect<void>
}

interface Journal {
  readonly append: (records: ReadonlyArray<object>) => Result.Result<void, SafeFile.MemoryFileError>
  readonly truncate: () => Result.Result<void, SafeFile.MemoryFileError>
  readonly close: () => void
}

/** The journal file, held open for appending (the run lock makes this its only writer). */
const openJournal = (file: string): Journal => {
  let held: { readonly fd: number; size: number } | undefined
  const hold = () =>
    held !== undefined ? Result.succeed(held) : Result.map(SafeFile.openWithStat(file, SafeFile.flags.append), ({ fd, stat }) => {
      held = { fd, size: stat.size }
      return held
    })
  const close = () => {
    if (held !== undefined) Result.try(() => fs.closeSync(held!.fd))
    held = undefined
  }
  return {
    append: (records) =>
      Result.flatMap(hold(), (target) => {
        const bytes = Buffer.from(records.map((record) => `${JSON.stringify(record)}\n`).join(""), "utf8")
        const written = SafeFile.appendAll(target.fd, file, bytes, target.size)
        if (Result.isSuccess(written)) target.size += bytes.length
        else close()
        return written
      }),
    truncate: () =>
      Result.flatMap(hold(), (target) => {
        const cut = Result.try({ try: () => fs.ftruncateSync(target.fd, 0), catch: (error) => SafeFile.failed(file, error) })
        if (Result.isSuccess(cut)) target.size = 0
        else close()
        return cut
      }),
    close
  }
}

const fromEntries = (recovered: ReadonlyArray<Owed>, journal: Journal | undefined, file: string): Outbox => {
  const owed = new Map(recovered.map((entry) => [entry.id, entry]))
  let nextId = recovered.reduce((max, entry) => Math.max(max, entry.id), 0) + 1
  let failing = false
  const outcome = (result: Result.Result<void, SafeFile.MemoryFileError>) =>
    Effect.suspend(() => {
      if (Result.isFailure(result)) {
        if (failing) return Effect.void
        failing = true
        return Effect.logError(
          `cannot write the Discord outbox ${file}: ${result.failure.message}; replies still go out, ` +
            "but one cut short by a crash now is lost (logged once until it works again)"
        )
      }
      if (!failing) return Effect.void
      failing = false
      return Effect.logInfo(`the Discord outbox ${file} is writable again`)
    })
  const write = (...records: ReadonlyArray<object>) =>
    journal === undefined ? Effect.void : Effect.suspend(() => outcome(journal.append(records)))
  return {
    recovered,
    queue: (reply) =>
      Effect.suspend(() => {
        const entry: Owed = { ...reply, id: nextId++, sent: 0 }
        owed.set(entry.id, entry)
        const target = Option.getOrUndefined(entry.target)
        return write({
          queued: entry.id,
          channel: entry.channel,
          parts: entry.parts,
          ...(target === undefined ? {} : { target }),
          at: entry.at
        }).pipe(Effect.as(entry))
      }),
    partSent: (entry, index) => write({ sent: entry.id, part: index }),
    finished: (entry) =>
      Effect.suspend(() => {
        owed.delete(entry.id)
        // Nothing owed: start the journal afresh instead of growing it.
        if (journal !== undefined && owed.size === 0) return outcome(journal.truncate())
        return write({ finished: entry.id })
      })
  }
}

/** An outbox in memory only: replies are not kept across a restart (tests, and a bridge with no directory). */
export const inMemory: Effect.Effect<Outbox> = Effect.sync(() => fromEntries([], undefined, "(memory)"))

/**
 * The outbox journaled in `directory`; its descriptor closes with the scope.
 * A journal that cannot be read is logged and set aside: the bridge still starts.
 */
export const make = (directory: string): Effect.Effect<Outbox, never, Scope.Scope> =>
  Effect.gen(function*() {
    const file = path.join(directory, outboxFileName)
    // A bridge process of its own may start before any run made the directory; a failure shows on the first write.
    Result.try(() => fs.mkdirSync(directory, { recursive: true, mode: 0o700 }))
    const text = SafeFile.readJournal(file)
    if (Result.isFailure(text)) {
      yield* Effect.logError(`cannot read the Discord outbox: ${text.failure.message}; replies it held are not resent`)
    }
    const journal = yield* Effect.acquireRelease(Effect.sync(() => openJournal(file)), (opened) => Effect.sync(opened.close))
    return fromEntries(replay(Result.getOrElse(text, () => "")), journal, file)
  })
