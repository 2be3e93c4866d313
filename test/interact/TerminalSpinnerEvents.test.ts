/**
 * On a terminal the spinner runs only until the turn shows itself: at its
 * first event (the model's first text) the line is erased and no frame is
 * drawn again while the turn goes on, however long; the reply then adds
 * only what was not shown. Time runs on TestClock.
 */
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Spinner from "../../src/interact/Spinner.js"
import * as Terminal from "../../src/interact/TerminalInteract.js"

/** Lets the streams deliver what was written (readline reads on the next turns of the event loop). */
const settle = Effect.promise(() => new Promise((resolve) => setImmediate(resolve))).pipe(Effect.repeat({ times: 3 }))

describe("the spinner and a turn's events", () => {
  it.effect("stops at the first event, not at the end of the turn", () =>
    Effect.gen(function*() {
      const input = new PassThrough()
      const output = new PassThrough()
      let written = ""
      output.on("data", (chunk: Buffer) => void (written += chunk.toString("utf8")))
      const terminal = yield* Terminal.make({ input, output, interactive: true, outputIsTerminal: true })
      const taken = yield* Effect.forkChild(Stream.runCollect(Stream.take(terminal.messages, 1)))
      input.write("tell me a story\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      yield* Fiber.join(taken)

      yield* TestClock.adjust("2 seconds")
      expect(written).toContain("thinking… 1s")
      yield* terminal.event!("cli", { _tag: "TextDelta", text: "Once upon " })
      const atEvent = written.length
      // Erased, then the text: the spinner's line does not stay beside it.
      expect(written.slice(0, atEvent).endsWith(`${Spinner.CLEAR}Once upon `)).toBe(true)

      // The turn goes on for a long while: no frame is drawn over the text.
      yield* TestClock.adjust("30 seconds")
      expect(written.slice(atEvent)).toBe("")
      yield* terminal.event!("cli", { _tag: "TextDelta", text: "a time." })
      yield* TestClock.adjust("30 seconds")
      expect(written.slice(atEvent)).toBe("a time.")

      yield* terminal.send({ channel: "cli", text: "Once upon a time." })
      // The rest of the reply is nothing: its newline, then the prompt (readline's redraw around it).
      expect(written.slice(atEvent).startsWith("a time.\n")).toBe(true)
      expect(written.slice(atEvent)).toContain(Terminal.PROMPT)
      expect(written.split("Once upon ").length).toBe(2)
      expect(written).not.toContain("thinking… 3s")
    }))
})
