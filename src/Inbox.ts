/**
 * A journal of messages accepted from a bridge and not yet answered, so a
 * run killed mid-turn answers them after restart (the original loses them).
 * Each message moves accepted → answered (reply decided) → delivered; the
 * journal is emptied whenever nothing is pending, so it stays tiny.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { InboundMessage } from "./Interact.js"
import { MemoryConfig, MemoryError } from "./Memory.js"
import { describeFsError } from "./memory/HistoryFile.js"

export interface Pending {
  readonly id: number
  readonly channel: string
  readonly text: string
  /** Set once the reply is decided; `stored` says whether the exchange goes to history. */
  readonly reply: Option.Option<{ readonly text: string; readonly stored: boolean }>
}

const Record = Schema.Union(
  Schema.Struct({ accepted: Schema.Number, channel: Schema.String, text: Schema.String }),
  Schema.Struct({ answered: Schema.Number, reply: Schema.String, stored: Schema.Boolean }),
  Schema.Struct({ delivered: Schema.Number })
)
const decodeRecord = Schema.decodeUnknownOption(Schema.parseJson(Record))

export interface InboxService {
  /** Messages a previous run accepted and did not finish, oldest first. */
  readonly recovered: ReadonlyArray<Pending>
  readonly accept: (message: InboundMessage) => Effect.Effect<Pending>
  readonly answered: (pending: Pending, reply: string, stored: boolean) => Effect.Effect<void>
  readonly delivered: (pending: Pending) => Effect.Effect<void>
}

export class Inbox extends Context.Tag("planckclaw/Inbox")<Inbox, InboxService>() {}

/** Replays the journal: what is still pending, in acceptance order. */
export const replay = (text: string): Array<Pending> => {
  const pending = new Map<number, Pending>()
  for (const line of text.split("\n")) {
    const record = decodeRecord(line)
    if (Option.isNone(record)) continue
    const value = record.value
    if ("accepted" in value) {
      pending.set(value.accepted, { id: value.accepted, channel: value.channel, text: value.text, reply: Option.none() })
    } else if ("answered" in value) {
      const entry = pending.get(value.answered)
      if (entry !== undefined) {
        pending.set(entry.id, { ...entry, reply: Option.some({ text: value.reply, stored: value.stored }) })
      }
    } else {
      pending.delete(value.delivered)
    }
  }
  return [...pending.values()]
}

export const make = (directory: string): Effect.Effect<InboxService, MemoryError> =>
  Effect.try({
    try: () => {
      const file = path.join(directory, ".inbox.jsonl")
      // Only a regular file: a link to a device (say /dev/full) would read forever.
      const present = fs.existsSync(file) && fs.lstatSync(file).isFile()
      const journal = present ? fs.readFileSync(file, "utf8") : ""
      // A torn last record (power loss, full disk) must not swallow the next one.
      if (journal.length > 0 && !journal.endsWith("\n")) fs.appendFileSync(file, "\n")
      const recovered = replay(journal)
      let nextId = recovered.reduce((max, entry) => Math.max(max, entry.id), 0) + 1
      const open = new Set(recovered.map((entry) => entry.id))

      // Journal failures (disk full, permissions) are loud but never lose the
      // message in this process: it is still answered, only not crash-safe.
      const write = (record: object) =>
        Effect.try(() => fs.appendFileSync(file, `${JSON.stringify(record)}\n`, { mode: 0o600 })).pipe(
          Effect.catchAll((error) => Effect.logError(`cannot write the inbox journal ${file}: ${describeFsError(error.error)}`))
        )

      const service: InboxService = {
        recovered,
        accept: (message) =>
          Effect.suspend(() => {
            const pending: Pending = { id: nextId++, channel: message.channel, text: message.text, reply: Option.none() }
            open.add(pending.id)
            return write({ accepted: pending.id, channel: pending.channel, text: pending.text }).pipe(Effect.as(pending))
          }),
        answered: (pending, reply, stored) => write({ answered: pending.id, reply, stored }),
        delivered: (pending) =>
          Effect.suspend(() => {
            open.delete(pending.id)
            // Nothing pending: start the journal afresh instead of growing it.
            return open.size === 0
              ? Effect.try(() => fs.writeFileSync(file, "", { mode: 0o600 })).pipe(
                Effect.catchAll((error) => Effect.logError(`cannot reset the inbox journal: ${describeFsError(error.error)}`))
              )
              : write({ delivered: pending.id })
          })
      }
      return service
    },
    catch: (cause) => new MemoryError({ message: `cannot read the inbox journal: ${describeFsError(cause)}`, cause })
  })

export const layer: Layer.Layer<Inbox, import("effect/ConfigError").ConfigError | MemoryError> = Layer.effect(
  Inbox,
  Effect.flatMap(MemoryConfig, make)
)
