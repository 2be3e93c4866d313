/**
 * The terminal adapter's events: on a terminal the turn shows as it goes and
 * the reply adds only what was not shown; into a pipe nothing but the reply
 * reaches stdout, and tool lines go to their own stream only when asked
 * (`--verbose`). Without one, a piped terminal takes no events at all.
 */
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Terminal from "../../src/interact/TerminalInteract.js"

const collect = (stream: PassThrough) => {
  const written: Array<string> = []
  stream.on("data", (chunk: Buffer) => void written.push(chunk.toString("utf8")))
  return written
}

describe("terminal events", () => {
  it.effect("into a pipe, with a stream for tool lines: stdout gets the reply alone, the tool line goes apart", () =>
    Effect.gen(function*() {
      const output = new PassThrough()
      const toolLines = new PassThrough()
      const out = collect(output)
      const tools = collect(toolLines)
      const terminal = yield* Terminal.make({ input: new PassThrough(), output, interactive: false, toolLines })
      yield* terminal.event!("cli", { _tag: "TextDelta", text: "Let me check." })
      yield* terminal.event!("cli", { _tag: "ToolCallStart", name: "get_time", input: { zone: "UTC" } })
      yield* terminal.event!("cli", { _tag: "ToolResult", name: "get_time", ok: true, ms: 7 })
      yield* terminal.send({ channel: "cli", text: "Let me check.\n\nIt is noon." })
      expect(out).toEqual(["Let me check.\n\nIt is noon.\n"])
      expect(tools.join("")).toBe("  get_time {\"zone\":\"UTC\"} ok 7 ms\n")
    }))

  it.effect("into a pipe without one: no events are taken, so a run sends none on the pipe", () =>
    Effect.gen(function*() {
      const terminal = yield* Terminal.make({ input: new PassThrough(), output: new PassThrough(), interactive: false })
      expect(terminal.event).toBeUndefined()
    }))

  it.effect("on a terminal: text and a dim tool line as they come, then only the rest of the reply", () =>
    Effect.gen(function*() {
      const output = new PassThrough()
      const out = collect(output)
      const terminal = yield* Terminal.make({ input: new PassThrough(), output, interactive: false, outputIsTerminal: true })
      yield* terminal.event!("cli", { _tag: "TextDelta", text: "Let me " })
      yield* terminal.event!("cli", { _tag: "TextDelta", text: "check." })
      yield* terminal.event!("cli", { _tag: "ToolCallStart", name: "dice", input: { sides: "x".repeat(100) } })
      yield* terminal.event!("cli", { _tag: "ToolResult", name: "dice", ok: false, ms: 12 })
      yield* terminal.event!("cli", { _tag: "TextDelta", text: "Rolled." })
      yield* terminal.send({ channel: "cli", text: "Let me check.\n\nRolled." })
      const shown = out.join("")
      expect(shown).toBe(
        `Let me check.\n\u001b[2m  dice {"sides":"${"x".repeat(49)}… failed 12 ms\u001b[22m\nRolled.\n`
      )
      // A reply that is not what was shown (an apology) comes whole, on a line of its own.
      yield* terminal.event!("cli", { _tag: "TextDelta", text: "Half" })
      yield* terminal.send({ channel: "cli", text: "I'm temporarily unavailable." })
      expect(out.join("").slice(shown.length)).toBe("Half\nI'm temporarily unavailable.\n")
    }))
})
