import * as child from "node:child_process"
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as Terminal from "../../src/interact/TerminalInteract.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { captureLogs } from "../support/LogCapture.js"
import { tempDir } from "../support/Sandbox.js"

const MiB = 1024 * 1024
const HOSTILE = "title\u001b]0;pwned\u0007 clear\u001b[2J\u001b[H colour\u001b[31m red\u001b[0m\rEVIL\u009b2J\ttab\nnext"

/** A terminal bridge on in-memory streams; every chunk written to the output is kept, in order. */
const open = (options: { interactive: boolean; outputIsTerminal?: boolean }) =>
  Effect.gen(function*() {
    const input = new PassThrough()
    const output = new PassThrough()
    const written: Array<string> = []
    output.on("data", (chunk: Buffer) => void written.push(chunk.toString("utf8")))
    const terminal = yield* Terminal.make({ input, output, ...options })
    return { input, output, written, terminal }
  })

const texts = (terminal: Effect.Success<ReturnType<typeof open>>["terminal"]) =>
  Stream.runCollect(terminal.messages).pipe(Effect.map((messages) => messages.map((m) => m.text)))

describe("terminal bridge output", () => {
  it.effect("on a terminal, strips control sequences from a reply, keeping newlines and tabs", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: true })
      yield* t.terminal.send({ channel: "cli", text: HOSTILE })
      expect(t.written).toContain("title clear colour redEVIL\ttab\nnext\n")
      expect(t.written.join("")).not.toContain("pwned")
    }))

  it.effect("strips when the output is a terminal even though the input is piped", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: false, outputIsTerminal: true })
      yield* t.terminal.send({ channel: "cli", text: HOSTILE })
      expect(t.written).toEqual(["title clear colour redEVIL\ttab\nnext\n"])
    }))

  it.effect("to a pipe or a file, writes the reply exactly as it was", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: false })
      yield* t.terminal.send({ channel: "cli", text: HOSTILE })
      expect(t.written).toEqual([`${HOSTILE}\n`])
    }))
})

describe("terminal bridge piped input", () => {
  it.effect("splits lines on LF only: a lone CR stays inside its message, CR LF ends a line", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: false })
      t.input.end("a\rb\nc\r\n\rd\r\r\n")
      expect(yield* texts(t.terminal)).toEqual(["a\rb", "c", "\rd\r"])
    }))

  it.effect("queues lines read before the stream is pulled, skips blank lines, keeps a last line without LF", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: false })
      t.input.write("first\n\n   \n\r\n")
      t.input.write("sec")
      t.input.end("ond\nlast without newline")
      // Let the input be read completely before anyone pulls the messages.
      yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      expect(yield* texts(t.terminal)).toEqual(["first", "second", "last without newline"])
    }))

  it.effect("decodes a character split across reads, and replaces invalid UTF-8 instead of failing", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: false })
      const smile = Buffer.from("😀")
      t.input.write(Buffer.concat([Buffer.from("face "), smile.subarray(0, 2)]))
      t.input.write(Buffer.concat([smile.subarray(2), Buffer.from("\nbad \xff\xfe bytes\n", "latin1")]))
      t.input.end(Buffer.from([0xc3, 0x0a]))
      expect(yield* texts(t.terminal)).toEqual(["face 😀", "bad \ufffd\ufffd bytes", "\ufffd"])
    }))

  it.effect("passes a line of several megabytes whole (the agent applies PLANCKCLAW_MAX_MESSAGE_BYTES)", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: false })
      const big = "x".repeat(3 * MiB)
      t.input.write(big.slice(0, MiB))
      t.input.write(big.slice(MiB))
      t.input.end("\nafter\n")
      expect(yield* texts(t.terminal)).toEqual([big, "after"])
    }))

  it.effect("skips a line over 16 MiB with a warning that says which and why, and reads on", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: false })
      t.input.write("before\n")
      const block = Buffer.alloc(MiB, "y")
      for (let i = 0; i < 17; i++) t.input.write(block)
      t.input.end("\nafter\n")
      const logs = yield* captureLogs
      expect(yield* Effect.provide(texts(t.terminal), logs.layer)).toEqual(["before", "after"])
      expect(logs.lines).toEqual([
        `WARN input line 2 is ${17 * MiB} bytes, over the ${16 * MiB}-byte limit for one line: ` +
        "it was skipped, send it in smaller parts"
      ])
    }))

  it.effect("stops reading while 16 MiB of lines wait to be taken, and reads on once they are", () =>
    Effect.gen(function*() {
      const t = yield* open({ interactive: false })
      const line = `${"z".repeat(1023)}\n`
      const nextTurn = Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      let lines = 0
      // Without a limit on what waits to be taken, reading would never stop.
      while (!t.input.isPaused() && lines < 64 * 1024) {
        lines++
        if (!t.input.write(line)) yield* nextTurn
      }
      expect(t.input.isPaused()).toBe(true)
      expect(lines * line.length).toBeGreaterThan(16 * MiB)
      expect(lines * line.length).toBeLessThan(17 * MiB)
      t.input.end()
      const all = yield* texts(t.terminal)
      expect(all.length).toBe(lines)
    }))
})

const setup = (...replies: [AnthropicServer.Reply, ...Array<AnthropicServer.Reply>]) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(AnthropicServer.replies(...replies))
    const cwd = yield* tempDir("planckclaw-terminal-")
    const env = Cli.runEnv(cwd, server.url)
    return { server, cwd, env }
  })

const quote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`

/** Runs `printf … | planckclaw run` with standard output on a pseudo-terminal (util-linux `script`). */
const runOnPty = (input: string, options: { cwd: string; env: NodeJS.ProcessEnv }) =>
  Effect.gen(function*() {
    const command = `printf '%s' ${quote(input)} | exec ${quote(process.execPath)} ${quote(Cli.BIN)} run`
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() =>
        child.spawn("script", ["-qfec", command, "/dev/null"], {
          cwd: options.cwd,
          env: { ...options.env, SHELL: "/bin/sh", TERM: "xterm" },
          stdio: ["pipe", "pipe", "pipe"]
        })
      ),
      (proc) => Effect.sync(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"))
    )
    let output = ""
    proc.stdout.on("data", (chunk: Buffer) => void (output += chunk.toString("utf8")))
    const code = yield* Effect.callback<number | null>((resume) => {
      proc.on("close", (code) => resume(Effect.succeed(code)))
    })
    return { code, output }
  })

const HOSTILE_REPLY = "\u001b]0;pwned\u0007Hello\u001b[2J there\u009b31m\rX\tend"

describe("planckclaw run (built command)", () => {
  it.live("sends `a\\rb` and `c\\r\\n` from a pipe as two messages", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.text("first reply"), AnthropicServer.text("second reply"))
      const result = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input: "a\rb\nc\r\n" })
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("first reply\nsecond reply\n")
      const requests = yield* t.server.requests
      expect(requests.map((request) => request.body.messages.at(-1))).toEqual([
        { role: "user", content: "a\nb" },
        { role: "user", content: "c" }
      ])
    }))

  it.live("prints a reply to a pipe exactly as the model wrote it", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.text(HOSTILE_REPLY))
      const result = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input: "hi\n" })
      expect(result.code).toBe(0)
      expect(result.stdout).toBe(`${HOSTILE_REPLY}\n`)
    }))

  it.live("prints a reply to a terminal without its control sequences, even with piped input", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.text(HOSTILE_REPLY))
      const result = yield* runOnPty("hi\n", { cwd: t.cwd, env: t.env })
      expect(result.code).toBe(0)
      // The pseudo-terminal turns LF into CR LF; nothing else in the output is a control.
      expect(result.output).toBe("Hello thereX\tend\r\n")
    }))
})
