/**
 * What the terminal prints for a reply, given the turn's text shown as it
 * came: only what was not shown yet, whatever whitespace the turn trimmed
 * off the text (a local model's leading blank lines, a trailing newline),
 * streamed or before a tool call; a reply that is not the text shown comes
 * whole.
 */
import { describe, expect, it } from "@effect/vitest"
import type { InteractEvent } from "../../src/ports/Interact.js"
import * as TurnProgress from "../../src/interact/TurnProgress.js"

/** Everything written for a turn of these events ending with `reply`. */
const screen = (events: ReadonlyArray<InteractEvent>, reply: string) => {
  let written = ""
  const progress = TurnProgress.make((text) => void (written += text))
  for (const event of events) progress.show(event)
  return written + progress.finish(reply)
}

const text = (...pieces: ReadonlyArray<string>): Array<InteractEvent> => pieces.map((piece) => ({ _tag: "TextDelta", text: piece }))
const tool: ReadonlyArray<InteractEvent> = [
  { _tag: "ToolCallStart", name: "get_time", input: {} },
  { _tag: "ToolResult", name: "get_time", ok: true, ms: 3 }
]
const TOOL_LINE = TurnProgress.toolLine("get_time", {}, true, 3)

describe("TurnProgress.finish", () => {
  it("a streamed text with whitespace around it, trimmed in the reply, is not printed again", () => {
    expect(screen(text("Hello ", "there.\n"), "Hello there.")).toBe("Hello there.\n")
    expect(screen(text("\n\n", "Hello", " there."), "Hello there.")).toBe("\n\nHello there.\n")
    expect(screen(text(" Hello there.  "), "Hello there.")).toBe(" Hello there.  \n")
  })

  it("text before a tool call with whitespace around it is not printed again with the final text", () => {
    expect(screen([...text("Let me check.\n\n"), ...tool, ...text("\nIt is noon.\n")], "Let me check.\n\nIt is noon."))
      .toBe(`Let me check.\n\n${TOOL_LINE}\nIt is noon.\n`)
    // A blank text before the call is no part of the reply.
    expect(screen([...text("  \n"), ...tool, ...text("It is noon.")], "It is noon."))
      .toBe(`  \n${TOOL_LINE}It is noon.\n`)
  })

  it("only the rest of the reply is printed when its final text was not shown", () => {
    expect(screen([...text(" Let me check.\n"), ...tool], "Let me check.\n\nIt is noon."))
      .toBe(` Let me check.\n${TOOL_LINE}It is noon.\n`)
  })

  it("a reply that is not the text shown is printed whole, on a line of its own", () => {
    expect(screen(text("Half an answer\n"), "I'm temporarily unavailable."))
      .toBe("Half an answer\nI'm temporarily unavailable.\n")
    expect(screen(text("Hello there"), "Hello world."))
      .toBe("Hello there\nHello world.\n")
    expect(screen(text("\n\n"), "I'm temporarily unavailable."))
      .toBe("\n\nI'm temporarily unavailable.\n")
  })

  it("nothing shown: the reply whole", () => {
    expect(screen([], "Hello there.")).toBe("Hello there.\n")
  })
})
