/**
 * interact_in / interact_out: `{channel}\t{text}\n`, text escaped (backslash
 * `\\`, newline `\n`, tab `\t`, carriage return `\r`). Pure codec.
 *
 * A cancel (Ctrl-C on the terminal) is `{channel}\t\t\n`: a text of one raw
 * tab, which no encoder writes (a tab travels as `\t`). An agent that predates
 * it reads a blank message, which it answers with nothing.
 */
import * as Result from "effect/Result"
import { cancelFor, type InboundMessage, type InteractEvent, type OutboundMessage } from "../ports/Interact.js"
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
 * The line without the CR of a CR LF ending (a bridge that writes them): no
 * encoded line holds a raw CR, and a cancel or an opt-in must stay one.
 */
const withoutCr = (line: string): string => line.endsWith("\r") ? line.slice(0, -1) : line

/**
 * Decodes one interact line (without its `\n`): the channel runs up to the
 * first tab. Bytes that were not UTF-8 arrive as U+FFFD: in the text that
 * costs a character, in the channel the way back, since a reply on the
 * changed name would reach no one; such a line is refused.
 */
export const decodeInteractLine = (rawLine: string): Result.Result<InboundMessage, MalformedMessage> => {
  const line = withoutCr(rawLine)
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

/**
 * A streaming event on interact_out, only to a bridge that asked for them:
 * `{channel}\t\t{kind}\t{escaped payload}\n`. Its text starts with a raw
 * tab, which no reply's escaped text does. Kinds: `text` (the delta itself),
 * `tool` (JSON `{"name","input"}`), `result` (JSON `{"name","ok","ms"}`).
 */
export const encodeEventLine = (channel: string, event: InteractEvent): Result.Result<string, MalformedMessage> => {
  if (/[\t\r\n]/.test(channel)) {
    return Result.fail(new MalformedMessage({ message: `channel ${JSON.stringify(channel)} holds a tab or line break` }))
  }
  const [kind, payload] = event._tag === "TextDelta"
    ? ["text", event.text]
    : event._tag === "ToolCallStart"
    ? ["tool", JSON.stringify({ name: event.name, input: event.input ?? null })]
    : ["result", JSON.stringify({ name: event.name, ok: event.ok, ms: event.ms })]
  return Result.succeed(`${channel}\t\t${kind}\t${escapeText(payload)}\n`)
}

/** What follows the channel's tab on an opt-in line. */
const EVENTS_TEXT = "\tevents"

/**
 * A bridge's opt-in to the events of `channel`'s turns: `{channel}\t\tevents\n`,
 * a text of a raw tab and a word, which no message encodes to. It is no
 * message: never answered, never journaled.
 */
export const encodeEventsOptIn = (channel: string): string => `${channel}\t${EVENTS_TEXT}\n`

/** The channel an interact_in line (without its `\n`) opts in to events for; undefined for any other line. */
export const eventsOptInChannel = (rawLine: string): string | undefined => {
  const line = withoutCr(rawLine)
  if (!line.endsWith(EVENTS_TEXT)) return undefined
  const tab = line.indexOf("\t")
  return tab === line.length - EVENTS_TEXT.length - 1 && tab > 0 ? line.slice(0, tab) : undefined
}

/** A line read from interact_out: a reply, or an event (see `encodeEventLine`). */
export type OutboundLine =
  | { readonly _tag: "Reply"; readonly reply: OutboundMessage }
  | { readonly _tag: "Event"; readonly channel: string; readonly event: InteractEvent }
  /** An event line this bridge cannot read (a later kind, or a bad payload): skipped, never shown as a reply. */
  | { readonly _tag: "UnknownEvent"; readonly channel: string; readonly problem: string }

const parseJson = (text: string): unknown => Result.getOrUndefined(Result.try(() => JSON.parse(text) as unknown))

const eventOf = (kind: string, payload: string): InteractEvent | undefined => {
  if (kind === "text") return { _tag: "TextDelta", text: payload }
  const json = parseJson(payload)
  if (typeof json !== "object" || json === null || typeof (json as { name?: unknown }).name !== "string") return undefined
  const fields = json as { name: string; input?: unknown; ok?: unknown; ms?: unknown }
  if (kind === "tool") return { _tag: "ToolCallStart", name: fields.name, input: fields.input }
  return kind === "result" && typeof fields.ok === "boolean" && typeof fields.ms === "number"
    ? { _tag: "ToolResult", name: fields.name, ok: fields.ok, ms: fields.ms }
    : undefined
}

/**
 * Decodes one interact_out line (without its `\n`). An event this bridge
 * cannot read is told apart, to be skipped: later agents may send more kinds.
 */
export const decodeOutboundLine = (rawLine: string): Result.Result<OutboundLine, MalformedMessage> => {
  const line = withoutCr(rawLine)
  const tab = line.indexOf("\t")
  if (tab === -1 || line[tab + 1] !== "\t") {
    return Result.map(decodeInteractLine(line), (reply) => ({ _tag: "Reply", reply }) as const)
  }
  const channel = line.slice(0, tab)
  const rest = line.slice(tab + 2)
  const kindEnd = rest.indexOf("\t")
  const kind = kindEnd === -1 ? rest : rest.slice(0, kindEnd)
  const event = kindEnd === -1 ? undefined : eventOf(kind, unescapeText(rest.slice(kindEnd + 1)))
  return Result.succeed(
    event !== undefined
      ? { _tag: "Event", channel, event }
      : { _tag: "UnknownEvent", channel, problem: `event ${JSON.stringify(kind)} unknown or malformed: ${excerpt(line)}` }
  )
}
