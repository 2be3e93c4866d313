/**
 * The interactive terminal on in-memory streams: the start hint, /quit,
 * pasted lines and a trailing backslash making one message, /help with the
 * terminal's /quit, and the spinner, whose timing runs on TestClock.
 */
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Commands from "../../src/agent/SlashCommands.js"
import * as Spinner from "../../src/interact/Spinner.js"
import * as Terminal from "../../src/interact/TerminalInteract.js"

const open = (options: { interactive: boolean; outputIsTerminal?: boolean }) =>
  Effect.gen(function*() {
    const input = new PassThrough()
    const output = new PassThrough()
    const written: Array<string> = []
    output.on("data", (chunk: Buffer) => void written.push(chunk.toString("utf8")))
    const terminal = yield* Terminal.make({ input, output, ...options })
    return { input, written, terminal, all: () => written.join("") }
  })

/** Lets the streams deliver what was written (readline reads on the next turns of the event loop). */
const settle = Effect.promise(() => new Promise((resolve) => setImmediate(resolve))).pipe(Effect.repeat({ times: 3 }))

/** The first `count` messages, collected in a fiber the test drives with TestClock. */
const take = (terminal: Effect.Success<ReturnType<typeof open>>["terminal"], count: number) =>
  Stream.runCollect(Stream.take(terminal.messages, count)).pipe(
    Effect.map((messages) => messages.map((message) => message.text)),
    Effect.forkChild
  )

describe("interactive terminal", () => {
  it.effect("says how to get help and how to quit before the first prompt", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: true })
      const text = t.all()
      expect(text).toContain(Terminal.HINT)
      expect(text.indexOf(Terminal.HINT)).toBeLessThan(text.indexOf(Terminal.PROMPT))
      expect(Terminal.HINT).toContain("/quit or Ctrl-D")
    }))

  it.effect("lines pasted at once are one message; lines typed apart are two", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: true })
      const messages = yield* take(t.terminal, 2)
      t.input.write("first line\rsecond line\rthird\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      t.input.write("typed later\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      expect(yield* Fiber.join(messages)).toEqual(["first line\nsecond line\nthird", "typed later"])
    }))

  it.effect("a line ending with a backslash goes on to the next, however long the pause", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: true })
      const messages = yield* take(t.terminal, 1)
      t.input.write("one\\\r")
      yield* settle
      yield* TestClock.adjust("1 minute")
      expect(t.all()).toContain(Terminal.CONTINUATION)
      t.input.write("two\\\r")
      yield* settle
      t.input.write("three\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      expect(yield* Fiber.join(messages)).toEqual(["one\ntwo\nthree"])
    }))

  it.effect("/quit ends the session like the end of input; what follows is not sent", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: true })
      const messages = yield* Stream.runCollect(t.terminal.messages).pipe(Effect.forkChild)
      t.input.write("hello\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      t.input.write("  /QUIT \r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      t.input.write("never sent\r")
      const sent = (yield* Fiber.join(messages)).map((message) => message.text)
      expect(sent).toEqual(["hello"])
    }))

  it.effect("the agent's /help gets the terminal's /quit", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: true })
      yield* t.terminal.send({ channel: "cli", text: Commands.HELP })
      expect(t.all()).toContain(Commands.helpText([Terminal.QUIT_HELP]))
      expect(t.all()).toContain("/quit            leave (or Ctrl-D)")
    }))

  it.effect("turns the agent's 'send /forget confirm' into a y/N question: y sends it, anything else forgets nothing", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: true })
      const messages = yield* take(t.terminal, 2)
      const preview = `This archives our conversation (2 history lines, 80 bytes). ${Commands.FORGET_ASK}`
      yield* t.terminal.send({ channel: "cli", text: preview })
      expect(t.all()).toContain(Terminal.FORGET_QUESTION)
      expect(t.all()).not.toContain(Commands.FORGET_ASK)
      t.input.write("no\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      expect(t.all()).toContain("Nothing was forgotten.")
      t.input.write("hello\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      yield* t.terminal.send({ channel: "cli", text: preview })
      t.input.write("Y\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      expect(yield* Fiber.join(messages)).toEqual(["hello", "/forget confirm"])
      // A command instead of an answer is sent as it is.
      const after = yield* take(t.terminal, 1)
      yield* t.terminal.send({ channel: "cli", text: preview })
      t.input.write("/usage\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      expect(yield* Fiber.join(after)).toEqual(["/usage"])
    }))

  it.effect("Ctrl-D while the agent works ends the input; the replies still owed are printed, with no prompt or question drawn", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: true })
      const messages = yield* Stream.runCollect(t.terminal.messages).pipe(Effect.forkChild)
      t.input.write("hello\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      t.input.write("\u0004")
      yield* settle
      expect((yield* Fiber.join(messages)).map((message) => message.text)).toEqual(["hello"])
      const before = t.all().length
      // Readline throws on a prompt once closed: each of these died with ERR_USE_AFTER_CLOSE.
      yield* t.terminal.send({ channel: "cli", text: "the answer" })
      yield* t.terminal.send({ channel: "cli", text: `This archives our conversation. ${Commands.FORGET_ASK}` })
      yield* t.terminal.send({ channel: "cli", text: "a scheduled reply" })
      expect(t.all().slice(before)).toBe("the answer\nThis archives our conversation.\na scheduled reply\n")
    }))

  it.effect("spins with the seconds elapsed while the agent works, and clears the line before the reply", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: true })
      const quick = yield* take(t.terminal, 1)
      t.input.write("/help\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      yield* Fiber.join(quick)
      yield* TestClock.adjust("300 millis")
      yield* t.terminal.send({ channel: "cli", text: "quick" })
      // An answer within the first moments shows no spinner at all.
      expect(t.all()).not.toContain("thinking")
      const messages = yield* take(t.terminal, 1)
      t.input.write("think hard\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      expect(yield* Fiber.join(messages)).toEqual(["think hard"])
      yield* TestClock.adjust("1 second")
      expect(t.all()).toContain("thinking… 0s")
      expect(t.all()).not.toContain("thinking… 1s")
      yield* TestClock.adjust("250 millis")
      expect(t.all()).toContain("thinking… 1s")
      expect(t.all()).not.toContain("thinking… 2s")
      yield* TestClock.adjust("2 seconds")
      expect(t.all()).toContain("thinking… 3s")
      expect(t.all()).not.toContain("thinking… 4s")
      yield* t.terminal.send({ channel: "cli", text: "the answer" })
      const after = t.all()
      const reply = after.lastIndexOf("the answer")
      // The spinner's line is erased right before the reply.
      expect(after.slice(0, reply).endsWith(Spinner.CLEAR)).toBe(true)
      const frames = t.written.length
      yield* TestClock.adjust("5 seconds")
      expect(t.written.length).toBe(frames)
    }))

  it.effect("never spins into a pipe", () =>
    Effect.gen(function*() {
      const piped = yield* open({ interactive: false })
      const messages = yield* take(piped.terminal, 1)
      piped.input.write("question\n")
      yield* settle
      expect(yield* Fiber.join(messages)).toEqual(["question"])
      yield* TestClock.adjust("10 seconds")
      expect(piped.all()).toBe("")
      // Input on a terminal but output into a file: no spinner either.
      const redirected = yield* open({ interactive: true, outputIsTerminal: false })
      const more = yield* take(redirected.terminal, 1)
      redirected.input.write("question\r")
      yield* settle
      yield* TestClock.adjust(Terminal.PASTE_WINDOW)
      yield* Fiber.join(more)
      yield* TestClock.adjust("10 seconds")
      expect(redirected.all()).not.toContain("thinking")
    }))
})
