/**
 * Ctrl-C on the interactive terminal (readline on in-memory streams, the
 * 2 s window on TestClock): it clears a half-typed line, cancels the
 * messages waiting for replies, and on an empty prompt says how to leave,
 * then leaves at a second press within 2 s. Given back, the terminal's
 * last line is ended and the cursor shown.
 */
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as CtrlC from "../../src/interact/CtrlC.js"
import * as Terminal from "../../src/interact/TerminalInteract.js"
import { cancelFor, type InboundMessage } from "../../src/ports/Interact.js"

const CTRL_C = "\u0003"
const CTRL_D = "\u0004"

// eslint-disable-next-line no-control-regex
const CURSOR_MOVES = /\u001b\[\d*[GJ]/g
const shown = (written: string) => written.replace(CURSOR_MOVES, "")

/** Lets the streams' events run (readline answers a key on the event loop). */
const settle = Effect.promise(() => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve))))

const open = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const input = new PassThrough()
  const output = new PassThrough()
  let written = ""
  output.on("data", (chunk: Buffer) => void (written += chunk.toString("utf8")))
  const terminal = yield* Scope.provide(Terminal.make({ input, output, interactive: true }), scope)
  const received: Array<InboundMessage> = []
  const reading = yield* Effect.forkChild(Stream.runForEach(terminal.messages, (message) => Effect.sync(() => received.push(message))))
  yield* settle
  // Past the paste window too, so a line typed is a message of its own.
  const type = (text: string) =>
    Effect.sync(() => input.write(text)).pipe(Effect.andThen(settle), Effect.andThen(TestClock.adjust("50 millis")), Effect.andThen(settle))
  const ended = Effect.andThen(settle, Effect.sync(() => reading.pollUnsafe() !== undefined))
  return { terminal, received, type, ended, written: () => written, close: Scope.close(scope, Exit.void) }
})

describe("Ctrl-C on the terminal", () => {
  it.effect("on an empty prompt says how to leave; a second press within 2 s leaves, a later one only says it again", () =>
    Effect.gen(function*() {
      const t = yield* open
      yield* t.type(CTRL_C)
      expect(shown(t.written())).toContain(`${Terminal.PROMPT}${CtrlC.ECHO}\n${CtrlC.LEAVE_HINT}\n${Terminal.PROMPT}`)
      yield* TestClock.adjust("2100 millis")
      yield* t.type(CTRL_C)
      expect(yield* t.ended).toBe(false)
      expect(t.written().split(CtrlC.LEAVE_HINT).length - 1).toBe(2)
      yield* TestClock.adjust("1900 millis")
      yield* t.type(CTRL_C)
      expect(yield* t.ended).toBe(true)
      expect(t.received).toEqual([])
      yield* t.close
      // Left after a `^C` line: the line is already ended; the cursor is shown.
      expect(t.written().endsWith(`${CtrlC.ECHO}\n${Terminal.SHOW_CURSOR}`)).toBe(true)
    }))

  it.effect("clears a half-typed line: what is typed next is the message, and the next press on the empty prompt only hints", () =>
    Effect.gen(function*() {
      const t = yield* open
      yield* t.type("half a tho")
      yield* t.type(CTRL_C)
      yield* t.type(CTRL_C)
      expect(yield* t.ended).toBe(false)
      expect(t.written()).toContain(CtrlC.LEAVE_HINT)
      yield* t.type("whole\r")
      expect(t.received).toEqual([{ channel: "cli", text: "whole" }])
      yield* t.close
    }))

  it.effect("while a message waits for its reply, sends a cancel; once answered, the prompt is idle again", () =>
    Effect.gen(function*() {
      const t = yield* open
      yield* t.type("long task\r")
      yield* t.type(CTRL_C)
      expect(t.received).toEqual([{ channel: "cli", text: "long task" }, cancelFor("cli")])
      expect(t.written()).not.toContain(CtrlC.LEAVE_HINT)
      yield* t.terminal.send({ channel: "cli", text: "Cancelled." })
      yield* t.type(CTRL_C)
      expect(t.received).toHaveLength(2)
      expect(t.written()).toContain(CtrlC.LEAVE_HINT)
      yield* t.close
    }))

  it.effect("drops an unfinished continued message", () =>
    Effect.gen(function*() {
      const t = yield* open
      yield* t.type("first part\\\r")
      yield* t.type(CTRL_C)
      yield* t.type("fresh\r")
      expect(t.received).toEqual([{ channel: "cli", text: "fresh" }])
      yield* t.close
    }))

  it.effect("Ctrl-D on the prompt leaves with the prompt's line ended and the cursor shown", () =>
    Effect.gen(function*() {
      const t = yield* open
      yield* t.type(CTRL_D)
      expect(yield* t.ended).toBe(true)
      yield* t.close
      expect(shown(t.written()).endsWith(`${Terminal.PROMPT}\n${Terminal.SHOW_CURSOR}`)).toBe(true)
    }))
})
