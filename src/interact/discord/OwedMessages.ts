/**
 * Discord messages handed on whose reply is not yet in the outbox, noted
 * where the next start finds them (OwedReplies): `serve` hands them to their
 * agents again under their keys, `run` to the agent again when its inbox
 * did not hold them, so a stop or crash between a message and its reply's
 * outbox line loses no reply. The cluster keeps them in PostgreSQL
 * (cluster/DiscordOwed.ts); `serve` and `run` in a file, here.
 *
 * The file, `.discord-owed.jsonl` beside the outbox: a line `{"owed": message}`
 * is written before the message is handed on, and `{"done": key}` once its
 * reply is journaled in the outbox. A torn last line (a crash mid-write) is
 * cut off when the file is read. Past twice the messages still owed plus
 * 1,000 lines, the file is rewritten with those alone (a new file, then a
 * rename).
 */
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SafeFile from "../../runtime/SafeFile.js"
import * as SafeJournal from "../../runtime/SafeJournal.js"
import type { DiscordMessage } from "./Inbound.js"
import { questionId } from "./ReplyTargets.js"

/** The key a Discord message or slash command goes by (Idempotency-Key, outbox, owed notes): its Discord id. */
export const keyFor = (message: DiscordMessage): string => `discord-${questionId(message.target)}`

/**
 * Messages handed on whose reply is not yet in the outbox, kept where the
 * next start (or another process, the cluster's database) finds them.
 */
export interface OwedReplies {
  /** Notes a message before it is handed on; a failure refuses the message. */
  readonly record: (message: DiscordMessage) => Effect.Effect<void, { readonly message: string }>
  /** Its reply is in the outbox (or it was refused). */
  readonly done: (message: DiscordMessage) => Effect.Effect<void>
  /** The messages noted and not done, oldest first. */
  readonly pending: Effect.Effect<ReadonlyArray<DiscordMessage>, { readonly message: string }>
}

export const FILE = ".discord-owed.jsonl"

/** A Discord message as it is kept until its reply is in the outbox. */
export const StoredMessage = Schema.Struct({
  channel: Schema.String,
  kind: Schema.Literals(["channel", "thread", "direct"]),
  guildId: Schema.optional(Schema.String),
  authorId: Schema.String,
  authorName: Schema.String,
  text: Schema.String,
  target: Schema.Union([Schema.Struct({ _tag: Schema.Literal("Message"), messageId: Schema.String }), Schema.Struct({ _tag: Schema.Literal("Interaction"), applicationId: Schema.String, interactionId: Schema.String, token: Schema.String })])
})

const fromStored = (decoded: Result.Result<typeof StoredMessage.Type, unknown>): DiscordMessage | undefined =>
  Result.isSuccess(decoded) ? { ...decoded.success, guildId: decoded.success.guildId } : undefined

const decodeValue = Schema.decodeUnknownResult(StoredMessage)
const decodeJson = Schema.decodeUnknownResult(Schema.fromJsonString(StoredMessage))

/** A kept message back from its JSON, or undefined when it is not one. */
export const parseStored = (json: string): DiscordMessage | undefined => fromStored(decodeJson(json))

/** A line: `{"done": key}`, `{"owed": message}`, or undefined (not JSON, or neither). */
const parseLine = (text: string): { readonly done: string } | { readonly owed: DiscordMessage } | undefined => {
  const json = Result.getOrUndefined(Result.try(() => JSON.parse(text) as unknown))
  if (typeof json !== "object" || json === null) return undefined
  const { done, owed } = json as Record<string, unknown>
  if (typeof done === "string") return { done }
  const message = fromStored(decodeValue(owed))
  return message === undefined ? undefined : { owed: message }
}

/** The messages owed in `directory`'s file, read once, here. */
export const make = (directory: string): Effect.Effect<OwedReplies, { readonly message: string }> =>
  Effect.suspend(() => {
    const file = path.join(directory, FILE)
    const loaded = SafeJournal.read(file)
    if (Result.isFailure(loaded)) return Effect.fail({ message: `cannot read ${file}: ${loaded.failure.message}` })
    // By key, oldest first: a Map keeps insertion order.
    const owed = new Map<string, DiscordMessage>()
    let lines = 0
    for (const text of loaded.success.split("\n")) {
      const line = parseLine(text)
      if (line === undefined) continue
      lines++
      if ("done" in line) owed.delete(line.done)
      else owed.set(keyFor(line.owed), line.owed)
    }

    const append = (line: string) => SafeFile.appendText(file, line)
    const rewrite = () =>
      Result.map(SafeFile.replace(file, [...owed.values()].map((message) => `${JSON.stringify({ owed: message })}\n`).join("")), () => {
        lines = owed.size
      })

    const record: OwedReplies["record"] = (message) =>
      Effect.suspend(() => {
        const key = keyFor(message)
        if (owed.has(key)) return Effect.void
        const written = append(`${JSON.stringify({ owed: message })}\n`)
        if (Result.isFailure(written)) return Effect.fail({ message: `cannot note the message in ${file}: ${written.failure.message}` })
        lines++
        owed.set(key, message)
        return Effect.void
      })

    const done: OwedReplies["done"] = (message) =>
      Effect.suspend(() => {
        const key = keyFor(message)
        if (!owed.delete(key)) return Effect.void
        const written = lines + 1 > 2 * owed.size + 1000 ? rewrite() : Result.map(append(`${JSON.stringify({ done: key })}\n`), () => {
          lines++
        })
        return Result.isSuccess(written)
          ? Effect.void
          : Effect.logWarning(`a Discord reply stays noted as owed in ${file} (${written.failure.message}); the next start posts it again`)
      })

    return Effect.succeed({ record, done, pending: Effect.sync(() => [...owed.values()]) })
  })
