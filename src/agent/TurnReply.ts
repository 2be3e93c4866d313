/**
 * What a turn replies when the model's last answer was not a plain, whole
 * one: cut short by its token limit or its safety filter, empty, or never
 * reached after the rounds of tool calls allowed.
 */
import { type MessagesResponse, responseText } from "../ports/Brain.js"
import type { Answer } from "./TurnOutcome.js"

/** An answer the model stopped before its end: what the reply says with its text, and without any. */
interface CutShort {
  readonly label: string
  readonly nothing: string
  /** Whether the cut answer is kept in history (and sent again with every later turn). */
  readonly stored: boolean
}

const TOKEN_LIMIT: CutShort = {
  label: "[answer cut short: the model hit its token limit]",
  nothing: "My answer was cut off before I could write anything (the model hit its token limit).",
  stored: true
}

// Half an answer its safety filter stopped is not one to build on: not stored.
const SAFETY_FILTER: CutShort = {
  label: "[answer cut short: the model's safety filter stopped it]",
  nothing: "My answer was refused before I could write anything (the model's safety filter stopped it).",
  stored: false
}

/** How the answer was cut short, by its stop reason (`refusal`: Anthropic's, and Chat Completions' `content_filter`). */
const cutShortBy = (stopReason: string | null | undefined): CutShort | undefined =>
  stopReason === "max_tokens" ? TOKEN_LIMIT : stopReason === "refusal" ? SAFETY_FILTER : undefined

/** The reply: what the model said before its tool calls (`before`), then its final text. */
export const finalReply = (response: MessagesResponse, before: ReadonlyArray<string>): Answer => {
  const last = responseText(response).trim()
  const cut = cutShortBy(response.stop_reason)
  // Without a final text the turn has no answer, whatever was said on the way.
  const text = last.length === 0 || before.length === 0 ? last : [...before, last].join("\n\n")
  if (text.length === 0) {
    return {
      stored: false,
      reply: cut?.nothing ?? "I have no answer to that (the model returned an empty reply). Please try rephrasing."
    }
  }
  return cut === undefined ? { stored: true, reply: text } : { stored: cut.stored, reply: `${text}\n\n${cut.label}` }
}

/** The reply when the model still called tools after the last round allowed. */
export const stoppedAfter = (rounds: number): Answer => ({
  stored: false,
  reply: `I stopped after ${rounds} rounds of tool calls without reaching an answer. ` +
    "Please try again, perhaps with a narrower question."
})
