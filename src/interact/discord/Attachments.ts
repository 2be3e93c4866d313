/**
 * Attachments of a message, for the agent: a text file (text/*, JSON, XML,
 * YAML, … up to DISCORD_ATTACHMENT_BYTES) has its content added to the
 * message; any other is named, with its type and size, so the agent knows it
 * was there.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { describeError } from "../../runtime/Errors.js"
import { nullable, nullableOr } from "./Nullable.js"

export const Attachment = Schema.Struct({
  id: Schema.String,
  filename: Schema.String,
  size: nullableOr(Schema.Number, 0),
  url: Schema.String,
  content_type: nullable(Schema.String)
})
export type Attachment = typeof Attachment.Type

const textTypes = /^(text\/|application\/(json|xml|yaml|x-yaml|toml|javascript|x-sh|x-python|sql|csv)\b)|\+(json|xml)\b/i
const textExtensions = /\.(txt|md|markdown|json|jsonl|csv|tsv|log|xml|ya?ml|toml|ini|cfg|conf|env|sh|py|js|mjs|ts|tsx|jsx|rs|go|java|c|h|cpp|hpp|rb|php|sql|html|css)$/i

/**
 * Text we can read: by its content type, or by its name, whatever its type says: the uploader's guess
 * labels TypeScript an MPEG video (video/mp2t) and PHP or Ruby application types. A binary file so named
 * fails the UTF-8 check, and is named as not read.
 */
export const isText = (attachment: Attachment): boolean =>
  textTypes.test(attachment.content_type ?? "") || textExtensions.test(attachment.filename)

/** A long wait for one file: Discord's CDN answers in well under a second. */
const fetchDeadline = Duration.seconds(20)

const utf8 = new TextDecoder("utf-8", { fatal: true })

const fetchText = (url: string, limit: number): Effect.Effect<string, string> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { signal })
      return { status: response.status, ok: response.ok, bytes: new Uint8Array(await response.arrayBuffer()) }
    },
    catch: describeError
  }).pipe(
    Effect.flatMap((got) =>
      !got.ok
        ? Effect.fail(`HTTP ${got.status}`)
        : got.bytes.length > limit
        ? Effect.fail(`larger than ${limit} bytes`)
        : Effect.try({ try: () => utf8.decode(got.bytes), catch: () => "not UTF-8 text" })
    ),
    Effect.timeoutOrElse({ duration: fetchDeadline, orElse: () => Effect.fail("no answer within 20 s") })
  )

const named = (attachment: Attachment, why: string) =>
  `[attachment ${attachment.filename} (${attachment.content_type ?? "unknown type"}, ${attachment.size} bytes): ${why}]`

/** One attachment as the agent reads it. */
const describe = (attachment: Attachment, limit: number): Effect.Effect<string> => {
  if (!isText(attachment)) return Effect.succeed(named(attachment, "not text, not included"))
  if (attachment.size > limit) return Effect.succeed(named(attachment, `over ${limit} bytes, not included`))
  return fetchText(attachment.url, limit).pipe(
    Effect.map((content) => `[attachment ${attachment.filename}]\n${content.replace(/\r\n?/g, "\n").trimEnd()}\n[end of ${attachment.filename}]`),
    Effect.catch((why) =>
      Effect.as(
        Effect.logWarning(`Discord attachment ${attachment.filename} could not be read: ${why}`),
        named(attachment, `could not be read (${why})`)
      )
    )
  )
}

/** The message's text with its attachments after it, one block each, in order. */
export const withAttachments = (
  text: string,
  attachments: ReadonlyArray<Attachment>,
  limit: number
): Effect.Effect<string> =>
  attachments.length === 0
    ? Effect.succeed(text)
    : Effect.map(
      Effect.forEach(attachments, (attachment) => describe(attachment, limit)),
      (blocks) => [text, ...blocks].filter((part) => part !== "").join("\n\n")
    )
