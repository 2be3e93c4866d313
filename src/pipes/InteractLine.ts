/**
 * interact_in / interact_out: `{channel}\t{text}\n`, text escaped (backslash
 * `\\`, newline `\n`, tab `\t`, carriage return `\r`). Pure codec.
 */
import * as Result from "effect/Result"
import type { InboundMessage, OutboundMessage } from "../ports/Interact.js"
import { MalformedMessage, excerpt } from "../runtime/Framing.js"

const escapes: Record<string, string> = { "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r" }
const unescapes: Record<string, string> = { "\\": "\\", n: "\n", t: "\t", r: "\r" }

/** Escapes text so that it fits on one line with no tab. */
export const escapeText = (text: string): string => text.replace(/[\\\n\t\r]/g, (c) => escapes[c] ?? c)

/** Reverses exactly `escapeText`; any other backslash sequence stays as it is. */
export const unescapeText = (escaped: string): string =>
  escaped.replace(/\\([\\ntr])/g, (sequence, c: string) => unescapes[c] ?? sequence)

/** `{channel}\t{escaped text}\n`; a channel holding a tab, CR or LF cannot be framed. */
export const encodeInteractLine = (message: OutboundMessage): Result.Result<string, MalformedMessage> =>
  /[\t\r\n]/.test(message.channel)
    ? Result.fail(new MalformedMessage({ message: `channel ${JSON.stringify(message.channel)} holds a tab or line break` }))
    : Result.succeed(`${message.channel}\t${escapeText(message.text)}\n`)

/**
 * Decodes one interact line (without its `\n`): the channel runs up to the
 * first tab. Bytes that were not UTF-8 arrive as U+FFFD: in the text that
 * costs a character, in the channel the way back, since a reply on the
 * changed name would reach no one; such a line is refused.
 */
export const decodeInteractLine = (line: string): Result.Result<InboundMessage, MalformedMessage> => {
  const tab = line.indexOf("\t")
  if (tab === -1) {
    return Result.fail(new MalformedMessage({ message: `interact line has no tab between channel and text: ${excerpt(line)}` }))
  }
  const channel = line.slice(0, tab)
  return channel.includes("\uFFFD")
    ? Result.fail(new MalformedMessage({ message: `interact line's channel is not valid UTF-8 (a reply could not name it): ${excerpt(line)}` }))
    : Result.succeed({ channel, text: unescapeText(line.slice(tab + 1)) })
}
