/**
 * `planckclaw run --verbose` with its output into a pipe: stdout stays one
 * reply per message (scripts read it), and each tool call gets a plain line
 * on stderr. Read by the plain-run parser and by effect/cli alike.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { tempDir } from "../support/Sandbox.js"

const PREAMBLE = "Let me check the time."
const FINAL = "It is noon."

const piped = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(AnthropicServer.replies(
      AnthropicServer.toolUse([{ id: "tu_1", name: "get_time", input: {} }], PREAMBLE),
      AnthropicServer.text(FINAL),
      AnthropicServer.text("Second.")
    ))
    const cwd = yield* tempDir("planckclaw-verbose-")
    return yield* Cli.run(args, { cwd, env: Cli.runEnv(cwd, server.url), input: "time?\nagain\n" })
  })

describe("planckclaw run --verbose into a pipe", () => {
  // The second is not a plain line (effect/cli parses it): the same flag, the same run.
  for (const args of [["run", "--verbose"], ["run", "--verbose", "--log-level", "warning"]]) {
    it.live(`${args.join(" ")}: the replies alone on stdout, one plain line per tool call on stderr`, () =>
      Effect.gen(function*() {
        const result = yield* piped(args)
        expect(result.code).toBe(0)
        expect(result.stdout).toBe(`${PREAMBLE}\n\n${FINAL}\nSecond.\n`)
        expect(result.stderr).toMatch(/^ {2}get_time \{\} ok \d+ ms$/m)
        expect(result.stderr.match(/get_time \{\}/g)).toHaveLength(1)
        // Plain text: no terminal escape reaches a log.
        expect(result.stderr).not.toContain("\u001b[")
      }))
  }

  it.live("without it, no tool line anywhere", () =>
    Effect.gen(function*() {
      const result = yield* piped(["run"])
      expect(result.stdout).toBe(`${PREAMBLE}\n\n${FINAL}\nSecond.\n`)
      expect(result.stderr).not.toContain("get_time {}")
    }))
})
