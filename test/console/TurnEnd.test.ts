/**
 * How the console reads a turn's `end` (console/src/replies.ts): a turn is
 * cancelled when the server says so in `cancelled`, whatever its reply's
 * words; a reply that was streamed adds only what the stream did not tell.
 */
import { describe, expect, it } from "@effect/vitest"
import { beyondTold, isCancelled } from "../../console/src/replies.js"
import * as TurnCancels from "../../src/hosts/serve/TurnCancels.js"

describe("the console's reading of a turn's end", () => {
  it("knows a cancel by the server's `cancelled`, not by the reply's words", () => {
    expect(isCancelled({ reply: TurnCancels.CANCELLED, stored: false, cancelled: true })).toBe(true)
    // A model that wrote the cancellation's very words, its exchange not stored: an answer.
    expect(isCancelled({ reply: TurnCancels.CANCELLED, stored: false, cancelled: false })).toBe(false)
    expect(isCancelled({ reply: "Cancelled: your 9am dentist appointment is off.", stored: true, cancelled: false })).toBe(false)
  })

  it("adds to a streamed reply only what the stream did not tell", () => {
    // Told in pieces, around a tool line: the reply joins the rounds trimmed, with a blank line.
    expect(beyondTold("Let me check.\n\nIt is noon.", "Let me check. It is noon.")).toBe("")
    // Cut short: the note after the text.
    expect(beyondTold("Once upon a time\n\n(cut short)", "Once upon a time")).toBe("(cut short)")
    // Nothing told: all of it.
    expect(beyondTold("  re: hi  ", "")).toBe("re: hi")
    // Another text (the brain gave up midway): not a continuation.
    expect(beyondTold("Sorry, the brain is unavailable.", "Let me check.")).toBeUndefined()
    expect(beyondTold("Let", "Let me check.")).toBeUndefined()
  })
})
