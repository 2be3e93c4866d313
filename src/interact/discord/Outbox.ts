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
 * A reply keyed by the question it answers (`discord-<id>`) is taken once:
 * the outbox remembers the keys of the replies it finished (the last 1,000,
 * kept across restarts), so a reply handed to it again after a restart (the
 * agent's, whose note that it was kept died with the process; a message
 * noted owed whose reply was already journaled) is not posted again, however
 * long Discord has forgotten its nonces. What remains: a part Discord
 * accepted in the instant before a crash, before its `sent` record, is sent
 * again with the same nonce, and posted twice if the restart comes after
 * Discord's memory of nonces (minutes).
 *
 * Records, one JSON object a line: `{queued, channel, parts, target?, key?, at}`,
 * `{sent, part}`, `{finished}` (all parts accepted, or given up), and
 * `{answered: [key…]}` (keys of replies finished, written when the journal
 * is rewritten). Past twice the lines still owed plus 1,000, the file is
 * rewritten with the replies owed and the keys kept (a new file, then a
 * rename), so it stays small. One bridge per memory directory writes it (the
 * run lock); a torn last line is cut off on open. A journal that cannot be
 * written is logged once; replies still go out, only not crash-safe.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as SafeFile from "../../runtime/SafeFile.js"
import * as SafeJournal from "../../runtime/SafeJournal.js"
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
  /** The question it answers (`discord-<id>`), when known: a reply with a key is taken once. */
  readonly key?: string | undefined
  /** When the bridge took it (epoch ms). */
  readonly at: number
}

/** Keys of finished replies kept at most. */
const answeredKept = 1000

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
    key: Schema.optional(Schema.String),
    at: Schema.Number
  }), Schema.Struct({ sent: Schema.Number, part: Schema.Number }), Schema.Struct({ finished: Schema.Number }), Schema.Struct({ answered: Schema.Array(Schema.String) })])
const decodeRecord = Schema.decodeUnknownOption(Schema.fromJsonString(RecordSchema))

/** Remembers `key` as answered, forgetting the oldest past the bound. */
const addAnswered = (answered: Set<string>, key: string) => {
  answered.delete(key)
  answered.add(key)
  if (answered.size > answeredKept) answered.delete(answered.values().next().value!)
}

interface Replayed {
  readonly owed: ReadonlyArray<Owed>
  readonly answered: Set<string>
  readonly lines: number
  /** The highest id the journal names: new replies take ids above it. */
  readonly lastId: number
}

/** Replays a journal: the replies still owed, in the order they were taken, and the keys of those finished. */
const replayJournal = (text: string): Replayed => {
  const owed = new Map<number, Owed>()
  const answered = new Set<string>()
  let lines = 0
  let lastId = 0
  for (const line of text.split("\n")) {
    const record = decodeRecord(line)
    if (Option.isNone(record)) continue
    lines++
    const value = record.value
    if ("queued" in value) {
      lastId = Math.max(lastId, value.queued)
      owed.set(value.queued, {
        id: value.queued,
        channel: value.channel,
        parts: value.parts,
        sent: 0,
        target: Option.fromNullishOr(value.target),
        ...(value.key === undefined ? {} : { key: value.key }),
        at: value.at
      })
    } else if ("sent" in value) {
      const entry = owed.get(value.sent)
      if (entry !== undefined) owed.set(entry.id, { ...entry, sent: Math.max(entry.sent, value.part + 1) })
    } else if ("finished" in value) {
      const key = owed.get(value.finished)?.key
      if (key !== undefined) addAnswered(answered, key)
      owed.delete(value.finished)
    } else {
      for (const key of value.answered) addAnswered(answered, key)
    }
  }
  for (const entry of owed.values()) {
    if (entry.sent >= entry.parts.length && entry.key !== undefined) addAnswered(answered, entry.key)
  }
  return { owed: [...owed.values()].filter((entry) => entry.sent < entry.parts.length), answered, lines, lastId }
}

/** Replays a journal: the replies still owed, in the order they were taken. */
export const replay = (text: string): ReadonlyArray<Owed> => replayJournal(text).owed

export interface Outbox {
  /** Replies a previous run took and Discord did not accept whole, oldest first. */
  readonly recovered: ReadonlyArray<Owed>
  /** A reply with this key was taken already: it is owed, or was delivered (or given up). */
  readonly knows: (key: string) => boolean
  /** Journals a new reply; once this returns, it survives a crash. */
  readonly queue: (reply: Omit<Owed, "id" | "sent">) => Effect.Effect<Owed>
  /** Discord accepted part `index` of the reply. */
  readonly partSent: (owed: Owed, index: number) => Effect.Effect<void>
  /** The reply is done with: delivered whole, or given up. */
  readonly finished: (owed: Owed) => Effect.Effect<void>
}

interface Journal {
  readonly append: (records: ReadonlyArray<object>) => Result.Result<void, SafeFile.MemoryFileError>
  /** Replaces the file with `records` (a new file, then a rename). */
  readonly rewrite: (records: ReadonlyArray<object>) => Result.Result<void, SafeFile.MemoryFileError>
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
    rewrite: (records) => {
      // The descriptor held names the file being replaced: the next append opens the new one.
      close()
      return SafeFile.replace(file, records.map((record) => `${JSON.stringify(record)}\n`).join(""))
    },
    close
  }
}

const queuedRecord = (entry: Owed) => {
  const target = Option.getOrUndefined(entry.target)
  return {
    queued: entry.id,
    channel: entry.channel,
    parts: entry.parts,
    ...(target === undefined ? {} : { target }),
    ...(entry.key === undefined ? {} : { key: entry.key }),
    at: entry.at
  }
}

const fromEntries = (replayed: Replayed, journal: Journal | undefined, file: string): Outbox => {
  const recovered = replayed.owed
  const owed = new Map(recovered.map((entry) => [entry.id, entry]))
  const answered = replayed.answered
  let lines = replayed.lines
  let nextId = replayed.lastId + 1
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
    journal === undefined ? Effect.void : Effect.suspend(() => {
      lines += records.length
      return outcome(journal.append(records))
    })
  // What is owed, as the journal would replay it, and the keys kept: the journal rewritten.
  const compacted = () => [
    ...(answered.size === 0 ? [] : [{ answered: [...answered] }]),
    ...[...owed.values()].flatMap((entry) => [
      queuedRecord(entry),
      ...(entry.sent === 0 ? [] : [{ sent: entry.id, part: entry.sent - 1 }])
    ])
  ]
  return {
    recovered,
    knows: (key) => answered.has(key) || [...owed.values()].some((entry) => entry.key === key),
    queue: (reply) =>
      Effect.suspend(() => {
        const entry: Owed = { ...reply, id: nextId++, sent: 0 }
        owed.set(entry.id, entry)
        return write(queuedRecord(entry)).pipe(Effect.as(entry))
      }),
    partSent: (entry, index) =>
      Effect.suspend(() => {
        const known = owed.get(entry.id)
        if (known !== undefined) owed.set(entry.id, { ...known, sent: Math.max(known.sent, index + 1) })
        return write({ sent: entry.id, part: index })
      }),
    finished: (entry) =>
      Effect.suspend(() => {
        owed.delete(entry.id)
        if (entry.key !== undefined) addAnswered(answered, entry.key)
        if (journal === undefined || lines + 1 <= 2 * owed.size + 1000) return write({ finished: entry.id })
        const records = compacted()
        lines = records.length
        return outcome(journal.rewrite(records))
      })
  }
}

/** An outbox in memory only: replies are not kept across a restart (tests, and a bridge with no directory). */
export const inMemory: Effect.Effect<Outbox> = Effect.sync(() =>
  fromEntries({ owed: [], answered: new Set(), lines: 0, lastId: 0 }, undefined, "(memory)")
)

/**
 * The outbox journaled in `directory`; its descriptor closes with the scope.
 * A journal that cannot be read is logged and set aside: the bridge still starts.
 */
export const make = (directory: string): Effect.Effect<Outbox, never, Scope.Scope> =>
  Effect.gen(function*() {
    const file = path.join(directory, outboxFileName)
    // A bridge process of its own may start before any run made the directory; a failure shows on the first write.
    Result.try(() => fs.mkdirSync(directory, { recursive: true, mode: 0o700 }))
    const text = SafeJournal.read(file)
    if (Result.isFailure(text)) {
      yield* Effect.logError(`cannot read the Discord outbox: ${text.failure.message}; replies it held are not resent`)
    }
    const journal = yield* Effect.acquireRelease(Effect.sync(() => openJournal(file)), (opened) => Effect.sync(opened.close))
    return fromEntries(replayJournal(Result.getOrElse(text, () => "")), journal, file)
  })
