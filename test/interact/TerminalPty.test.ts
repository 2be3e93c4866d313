/**
 * A session in a real pseudo-terminal: the built `planckclaw run` under
 * util-linux `script`, typed at through the pty, against a loopback brain.
 * Every slash command, pasted and continued lines, the spinner, a
 * misconfigured brain told plainly, a reply shown once, /quit ending the
 * run, and Ctrl-D ending it at the prompt or while a turn runs.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { session } from "../support/PtySession.js"
import { eventually, tempDir } from "../support/Sandbox.js"

const setup = (handler: AnthropicServer.Handler) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(handler)
    const cwd = yield* tempDir("planckclaw-pty-")
    const env = Cli.runEnv(cwd, server.url, {
      SHELL: "/bin/sh",
      TERM: "xterm",
      COLUMNS: "200",
      LINES: "50"
    })
    return { server, cwd, env }
  })

describe("planckclaw run in a pseudo-terminal", () => {
  it.live("hint, every slash command, pasted and continued lines, the spinner, then /quit", () =>
    Effect.gen(function*() {
      const t = yield* setup((request, index) =>
        AnthropicServer.lastUserText(request.body) === "slow"
          ? AnthropicServer.delay(1600, AnthropicServer.text("slow answer"))
          : AnthropicServer.echo(request, index)
      )
      const s = yield* session(t)
      yield* s.until("/help for commands, /quit or Ctrl-D to leave")
      yield* s.until("planckclaw> ")

      yield* s.type("/help\r")
      yield* s.until("/forget          archive our conversation")
      yield* s.until("/quit            leave (or Ctrl-D)")

      yield* s.type("/tools\r")
      yield* s.until("get_time")

      yield* s.type("/usage\r")
      yield* s.until("No usage ledger yet")

      yield* s.type("/nope\r")
      yield* s.until("unknown command /nope — /help lists the commands")

      // Pasted: two lines in one write are one message.
      yield* s.type("line one\rline two\r")
      yield* s.until("re: line one\nline two")

      // Continued with a trailing backslash.
      yield* s.type("part one\\\r")
      yield* s.until("... ")
      yield* s.type("part two\r")
      yield* s.until("re: part one\npart two")

      yield* s.type("slow\r")
      const waited = yield* s.until("slow answer")
      expect(waited).toContain("thinking… 1s")
      // The spinner's line was erased right before the reply.
      expect(s.raw()).toMatch(/thinking… 1s(?:\r\u001b\[2K[^\r]*)*\r\u001b\[2Kslow answer/)

      yield* s.type("/usage\r")
      yield* s.until("Total: 3 requests")

      yield* s.type("/compact\r")
      yield* s.until("Nothing to compact")

      // On a terminal /forget asks y/N; anything but y forgets nothing.
      yield* s.type("/forget\r")
      expect(yield* s.until("Archive it all and start afresh? [y/N] ")).toContain("nothing is deleted.")
      yield* s.type("n\r")
      yield* s.until("Nothing was forgotten.")
      yield* s.type("/forget\r")
      yield* s.until("[y/N] ")
      yield* s.type("y\r")
      yield* s.until("The next message starts afresh.")

      yield* s.type("who are you?\r")
      yield* s.until("re: who are you?")

      yield* s.type("/quit\r")
      expect(yield* s.exit).toBe(0)

      const turns = yield* t.server.turns
      expect(turns.map((request) => AnthropicServer.lastUserText(request.body))).toEqual([
        "line one\nline two",
        "part one\npart two",
        "slow",
        "who are you?"
      ])
      // After the forget, the request carries no old history.
      expect(turns.at(-1)!.body.messages).toHaveLength(1)
    }), 90_000)

  it.live("a brain that refuses the key is told plainly, and Ctrl-D leaves", () =>
    Effect.gen(function*() {
      const t = yield* setup(() => AnthropicServer.apiError(401, "authentication_error", "invalid x-api-key"))
      const s = yield* session(t)
      yield* s.until("planckclaw> ")
      yield* s.type("hello\r")
      yield* s.until("my brain is misconfigured")
      yield* s.type("\u0004")
      expect(yield* s.exit).toBe(0)
    }), 60_000)

  it.live("Ctrl-D while a turn runs: the reply is shown, then the run leaves with 0, as Ctrl-D at the prompt does", () =>
    Effect.gen(function*() {
      const t = yield* setup(() => AnthropicServer.delay(800, AnthropicServer.text("slow answer")))
      const s = yield* session(t)
      yield* s.until("planckclaw> ")
      yield* s.type("slow\r")
      yield* eventually("the brain to get the request", () => Effect.runSync(t.server.turns).length === 1 || undefined)
      yield* s.type("\u0004")
      const code = yield* s.exit
      const screen = s.screen()
      expect(screen).toContain("slow answer")
      expect({ code, crashed: screen.includes("unexpected failure") }, screen).toEqual({ code: 0, crashed: false })
    }), 60_000)

  it.live("a model's answer ending with a newline is shown once: the reply, trimmed, adds nothing to it", () =>
    Effect.gen(function*() {
      const t = yield* setup(() => AnthropicServer.text("Hello there.\n"))
      const s = yield* session(t)
      yield* s.until("planckclaw> ")
      yield* s.type("hi\r")
      yield* s.until("Hello there.")
      yield* s.until("planckclaw> ")
      yield* s.type("/quit\r")
      expect(yield* s.exit).toBe(0)
      const screen = s.screen()
      expect(screen.split("Hello there.").length - 1, JSON.stringify(screen)).toBe(1)
    }), 60_000)
})
