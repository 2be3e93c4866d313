/**
 * `planckclaw run` shows a turn as it goes on a terminal: the model's text
 * before its tool call and a dim line for the call appear while the turn is
 * still running (its last brain answer held back), then the rest of the
 * reply, never the shown text twice. Into a pipe, stdout stays the reply
 * alone, as before.
 */
import * as child from "node:child_process"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import { eventually, tempDir, within } from "../support/Sandbox.js"

const quote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`

const setup = (...replies: [AnthropicServer.Reply, ...Array<AnthropicServer.Reply>]) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(AnthropicServer.replies(...replies))
    const cwd = yield* tempDir("planckclaw-streaming-")
    const env = Cli.runEnv(cwd, server.url)
    return { server, cwd, env }
  })

const PREAMBLE = "Let me check the time."
const FINAL = "It is noon."
const toolRound = AnthropicServer.toolUse([{ id: "tu_1", name: "get_time", input: {} }], PREAMBLE)

describe("planckclaw run shows a turn as it goes", () => {
  it.live("on a terminal: the text before a tool call and its dim line come before the turn ends", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const t = yield* setup(toolRound, LoopbackHttp.gated(gate, AnthropicServer.text(FINAL)))
      // Standard output on a pseudo-terminal, the message piped in: the input ends, the run waits for the reply.
      const command = `printf 'time?\\n' | exec ${quote(process.execPath)} ${quote(Cli.BIN)} run`
      const proc = yield* Effect.acquireRelease(
        Effect.sync(() =>
          child.spawn("script", ["-qfec", command, "/dev/null"], {
            cwd: t.cwd,
            env: { ...t.env, SHELL: "/bin/sh", TERM: "xterm" },
            stdio: ["pipe", "pipe", "pipe"]
          })
        ),
        (proc) => Effect.sync(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"))
      )
      let output = ""
      proc.stdout.on("data", (chunk: Buffer) => void (output += chunk.toString("utf8")))
      const closed = Effect.callback<number | null>((resume) => {
        proc.on("close", (code) => resume(Effect.succeed(code)))
      })

      // The final answer is held back: what shows now, the turn is still running.
      const shown = yield* eventually("the tool line", () => /get_time \{\} ok \d+ ms/.test(output) ? output : undefined)
      expect(shown).toContain(PREAMBLE)
      expect(shown.indexOf(PREAMBLE)).toBeLessThan(shown.indexOf("get_time {}"))
      expect(shown).toMatch(/\u001b\[2m {2}get_time \{\} ok \d+ ms\u001b\[22m\r\n$/)
      expect(shown).not.toContain(FINAL)

      yield* Deferred.succeed(gate, undefined)
      expect(yield* within("the run to end", "20 seconds")(closed)).toBe(0)
      // The preamble is not printed again with the reply; the final text follows the tool line.
      expect(output.split(PREAMBLE).length).toBe(2)
      expect(output).toMatch(/ok \d+ ms\u001b\[22m\r\nIt is noon\.\r\n$/)
    }))

  it.live("into a pipe: stdout is the reply alone, one per message, as before", () =>
    Effect.gen(function*() {
      const t = yield* setup(toolRound, AnthropicServer.text(FINAL), AnthropicServer.text("Second."))
      const result = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input: "time?\nagain\n" })
      expect(result.code).toBe(0)
      expect(result.stdout).toBe(`${PREAMBLE}\n\n${FINAL}\nSecond.\n`)
      expect(result.stderr).not.toContain("get_time {}")
    }))
})
