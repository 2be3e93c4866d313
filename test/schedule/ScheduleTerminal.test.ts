/**
 * A scheduled reply reaching the terminal of an interactive `run` (the
 * built command in a pseudo-terminal) while the user is typing: it is shown
 * on a line of its own above the prompt, and the half-typed line is kept,
 * with the cursor where it was (before, the reply was glued to the typed
 * text and what was typed next went in front of it).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { session } from "../support/PtySession.js"
import { tempDir } from "../support/Sandbox.js"

describe("a scheduled reply on an interactive terminal", () => {
  it.live("arrives above the prompt; the line being typed stays whole", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const cwd = yield* tempDir("planckclaw-pty-")
      const env = Cli.runEnv(cwd, server.url, { SHELL: "/bin/sh", TERM: "xterm", COLUMNS: "200", LINES: "50" })
      const s = yield* session({ cwd, env })
      yield* s.until("planckclaw> ")
      yield* s.type("hel")
      yield* s.until("hel")
      // Added beside the running agent, a second ahead: the run reads its schedule again within two seconds.
      const added = yield* Cli.run(["schedule", "add", "--at", "+1s", "stretch"], { cwd, env })
      const id = /^added ([0-9a-f]{8}):/.exec(added.stdout)![1]!
      yield* s.until(`[schedule ${id}] re: [scheduled ${id}] stretch\n`)
      // The prompt drawn again below it, with the half-typed line, the cursor after it.
      yield* s.until("planckclaw> hel")
      yield* s.type("lo\r")
      yield* s.until("re: hello\n")
      yield* s.type("/quit\r")
      expect(yield* s.exit).toBe(0)
    }))
})
