/**
 * Replies already given, by Idempotency-Key, for one agent: a retry with the
 * same key gets the same reply without a second turn, also after a restart.
 * One JSON line per reply in `.idempotency.jsonl` in the agent's directory,
 * written before the caller is answered. A torn last line (a crash mid-write)
 * is cut off when the file is opened. The file keeps at most about twice
 * PLANCKCLAW_IDEMPOTENCY_KEYS lines: past that it is rewritten with the newest
 * keys (a new file, then a rename: a crash leaves the old or the new).
 * A line that cannot be written (a full disk) is kept and written with the
 * next one; until then the agent keeps the message in its inbox journal
 * (AgentInstance), so a restart records the key rather than forgetting it.
 */
import * as crypto from "node:crypto"
import * as path from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { numberOf } from "../../config/ConfigRange.js"
import { IdempotencyKeys } from "../../config/settings/Serve.js"
import { madeOnFirstCall } from "../../runtime/FirstCall.js"
import * as SafeFile from "../../runtime/SafeFile.js"
import * as SafeJournal from "../../runtime/SafeJournal.js"

/** How many keys each agent remembers (the oldest are forgotten first). */
export const IdempotencyConfig = numberOf(IdempotencyKeys)

/** What a key may be: 1 to KEY_MAX_LENGTH visible ASCII characters. */
export const KEY_MAX_LENGTH = 200
export const KEY_RULE = `1 to ${KEY_MAX_LENGTH} visible ASCII characters (no spaces)`
export const validKey = (key: string): boolean => key.length <= KEY_MAX_LENGTH && /^[\x21-\x7e]+$/.test(key)

export interface Remembered {
  readonly reply: string
  readonly stored: boolean
  /** The message the reply answered (`requestOf`); absent in lines written before it was kept. */
  readonly request?: string | undefined
}

/**
 * What identifies a message's content under its Idempotency-Key: a retry
 * must send the same channel and text, and a key sent again with another
 * message is refused rather than answered with the first one's reply.
 */
export const requestOf = (message: { readonly channel: string; readonly text: string }): string =>
  crypto.createHash("sha256").update(message.channel).update("\t").update(message.text).digest("base64url").slice(0, 22)

/** Why a key cannot be answered for this message: another message was sent under it. */
export const reusedKey = (key: string): string =>
  `Idempotency-Key ${JSON.stringify(key)} was already used for another message (another text or channel); ` +
  "send a new message under a new key"

export class IdempotencyStoreError extends Data.TaggedError("IdempotencyStoreError")<{
  readonly message: string
}> {}

const decodeLine = madeOnFirstCall(() =>
  Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Struct({ key: Schema.String, reply: Schema.String, stored: Schema.Boolean, request: Schema.optional(Schema.String) })))
)

export interface IdempotencyStore {
  readonly lookup: (key: string) => Option.Option<Remembered>
  /**
   * Durable when it returns (as durable as the inbox journal), with every
   * line not written before; a write failure is logged (once until one
   * works), the key kept in memory and left `unwritten`.
   */
  readonly remember: (key: string, value: Remembered) => Effect.Effect<void>
  /** Whether `key`'s line still waits to be written (a full disk). */
  readonly unwritten: (key: string) => boolean
  /** Writes the lines left unwritten, if any. */
  readonly flush: Effect.Effect<void>
}

export const FILE = ".idempotency.jsonl"

/** Opens (or finds absent) the store of `directory`; the file is read once, here (not at all in a `fresh` directory, made just now). */
export const open = (directory: string, keep: number, fresh = false): Effect.Effect<IdempotencyStore, IdempotencyStoreError> =>
  Effect.suspend(() => {
    const file = path.join(directory, FILE)
    // Never through a link, only a regular file of this user; a torn last line is cut off.
    const loaded = fresh
      ? Result.succeed("")
      : Result.mapError(SafeJournal.read(file), (error) => new IdempotencyStoreError({ message: `cannot read ${file}: ${error.message}` }))
    if (Result.isFailure(loaded)) return Effect.fail(loaded.failure)
    // A Map keeps insertion order: the first entries are the oldest.
    const entries = new Map<string, Remembered>()
    // Keys whose line could not be written yet, oldest first.
    const unwritten = new Set<string>()
    let failing = false
    let lines = 0
    const forgetOldest = () => {
      while (entries.size > keep) {
        const oldest = entries.keys().next().value!
        entries.delete(oldest)
        unwritten.delete(oldest)
      }
    }
    for (const line of loaded.success.split("\n")) {
      // No record, as the decoder would say too, at far less cost: an absent or empty file is one empty line.
      if (line === "") continue
      const record = decodeLine(line)
      if (Option.isNone(record)) continue
      lines++
      entries.delete(record.value.key)
      const { reply, request, stored } = record.value
      entries.set(record.value.key, { reply, stored, request })
    }
    forgetOldest()

    // JSON leaves out a `request` that is undefined.
    const encode = (key: string, value: Remembered) =>
      `${JSON.stringify({ key, reply: value.reply, stored: value.stored, request: value.request })}\n`

    // A new file, then a rename: a crash leaves the old or the new.
    const rewrite = () =>
      Result.map(SafeFile.replace(file, [...entries].map(([key, value]) => encode(key, value)).join(""), true), () => {
        lines = entries.size
      })

    // Checked as a memory file is; a short write is cut back off (appendAll).
    const append = (line: string) => SafeFile.appendText(file, line)

    /** Writes the lines of the keys left unwritten (one append, or the rewrite it is time for). */
    const writeUnwritten = Effect.suspend(() => {
      const keys = [...unwritten].filter((key) => entries.has(key))
      const written = lines + keys.length > 2 * keep
        ? rewrite()
        : Result.map(append(keys.map((key) => encode(key, entries.get(key)!)).join("")), () => {
          lines += keys.length
        })
      if (Result.isSuccess(written)) {
        unwritten.clear()
        if (!failing) return Effect.void
        failing = false
        return Effect.logInfo(`${file} is writable again; the Idempotency-Keys it could not take are recorded`)
      }
      if (failing) return Effect.void
      failing = true
      return Effect.logError(
        `cannot record Idempotency-Key(s) in ${file}: ${written.failure.message}; kept in the inbox journal until they can be ` +
          "(logged once until it works)"
      )
    })

    const remember = (key: string, value: Remembered) =>
      Effect.suspend(() => {
        entries.delete(key)
        entries.set(key, value)
        forgetOldest()
        unwritten.delete(key)
        unwritten.add(key)
        return writeUnwritten
      })

    return Effect.succeed({
      lookup: (key) => Option.fromNullishOr(entries.get(key)),
      remember,
      unwritten: (key) => unwritten.has(key),
      flush: Effect.suspend(() => unwritten.size === 0 ? Effect.void : writeUnwritten)
    })
  })
