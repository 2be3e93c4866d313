/**
 * interact_in / interact_out: `{channel}\t{text}\n`, text escaped (backslash
 * `\\`, newline `\n`, tab `\t`, carriage return `\r`). Pure codec.
 *
 * A cancel (Ctrl-C on the terminal) is `{channel}\t\t\n`: a text of one raw
 * tab, which no encoder writes (a tab travels as `\t`). An agent that predates
 * it reads a blank message, which it answers with nothing.
 */
import * as Result from "effect/Result"
import { cancelFor, type InboundMessage, type OutboundMessage } from "../ports/Interact.js"
import { MalformedMessage, excerpt } from "../runtime/Framing.js"

const escapes: Record<string, string> = { "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r" }
const unescapes: Record<string, string> = { "\\": "\\", n: "\n", t: "\t", r: "\r" }

/** Escapes text so that it fits on one line with no tab. */
export const escapeText = (text: string): string => text.replace(/[\\\n\t\r]/g, (c) => escapes[c] ?? c)

/** Reverses exactly `escapeText`; any other backslash sequence stays as it is. */
export const unescapeText = (escaped: string): string =>
  escaped.replace(/\\([\\ntr])/g, (sequence, c: string) => unescapes[c] ?? sequence)

/** What follows the channel's tab on a cancel line. */
const CANCEL_TEXT = "\t"

/** `{channel}\t{escaped text}\n` (a cancel: `{channel}\t\t\n`); a channel holding a tab, CR or LF cannot be framed. */
export const encodeInteractLine = (message: OutboundMessage | InboundMessage): Result.Result<string, MalformedMessage> =>
  /[\t\r\n]/.test(message.channel)
    ? Result.fail(new MalformedMessage({ message: `channel ${JSON.stringify(message.channel)} holds a tab or line break` }))
    : Result.succeed(`${message.channel}\t${"cancel" in message && message.cancel === true ? CANCEL_TEXT : escapeText(message.text)}\n`)

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
    : line.slice(tab + 1) === CANCEL_TEXT
    ? Result.succeed(cancelFor(channel))
    : Result.succeed({ channel, text: unescapeText(line.slice(tab + 1)) })
}
