/**
 * `planckclaw run` on a terminal streams the model's text through the brain
 * pipes: its built-in brain bridge sends the text as event frames on
 * brain_out (asked with `"stream":true`), and each piece is on the screen
 * while the loopback brain still holds the rest of its answer back.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { CANCELLED } from "../../src/ports/Interact.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import { eachBrainRequest, mkfifo, sh, writeScript } from "../support/FifoKit.js"
import { session } from "../support/PtySession.js"
import { eventually, tempDir } from "../support/Sandbox.js"

describe("planckclaw run streams text through the pipes", () => {
  it.live("a slowly streaming brain's text appears piece by piece before the turn ends", () =>
    Effect.gen(function*() {
      const second = yield* Deferred.make<void>()
      const third = yield* Deferred.make<void>()
      const streamed = LoopbackHttp.events([
        AnthropicServer.messageStart(),
        ...AnthropicServer.blockEvents({ type: "text", pieces: ["Once upon "] }, 0).slice(0, 2),
        second,
        AnthropicServer.sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "a time, " } }),
        third,
        AnthropicServer.sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "the end." } }),
        AnthropicServer.sse({ type: "content_block_stop", index: 0 }),
        ...AnthropicServer.messageEnd("end_turn")
      ])
      const server = yield* AnthropicServer.make(AnthropicServer.streamingWhenAsked(streamed, AnthropicServer.text("never")))
      const cwd = yield* tempDir("planckclaw-run-stream-")
      const env = Cli.runEnv(cwd, server.url, { SHELL: "/bin/sh", TERM: "xterm", COLUMNS: "200", LINES: "50" })
      const s = yield* session({ cwd, env })
      yield* s.until("planckclaw> ")
      yield* s.type("tell me a story\r")

      // Each piece is shown while the next is still held by the server: the turn has not ended.
      yield* s.until("Once upon ")
      expect(s.screen()).not.toContain("a time")
      yield* Deferred.succeed(second, undefined)
      yield* s.until("a time, ")
      expect(s.screen()).not.toContain("the end.")
      yield* Deferred.succeed(third, undefined)
      yield* s.until("the end.")
      // The reply then adds nothing already shown: the prompt comes back, the story once.
      yield* s.until("planckclaw> ")
      expect(s.screen().split("Once upon a time, the end.").length).toBe(2)

      // The brain was asked for a stream, through the brain pipes.
      const requests = yield* server.requests
      expect(requests.map((request) => (request.body as { readonly stream?: unknown }).stream)).toEqual([true])
      yield* s.type("/quit\r")
      expect(yield* s.exit).toBe(0)
    }))

  it.live("Ctrl-C after some text was streamed cancels the turn: the rest never comes, nothing is stored", () =>
    Effect.gen(function*() {
      const never = yield* Deferred.make<void>()
      const halted = LoopbackHttp.events([
        AnthropicServer.messageStart(),
        ...AnthropicServer.blockEvents({ type: "text", pieces: ["Half a "] }, 0).slice(0, 2),
        never
      ])
      const server = yield* AnthropicServer.make(AnthropicServer.replies(halted, AnthropicServer.text("Whole again.")))
      const cwd = yield* tempDir("planckclaw-run-stream-cancel-")
      const env = Cli.runEnv(cwd, server.url, { SHELL: "/bin/sh", TERM: "xterm", COLUMNS: "200", LINES: "50" })
      const s = yield* session({ cwd, env })
      yield* s.until("planckclaw> ")
      yield* s.type("start\r")
      yield* s.until("Half a ")
      yield* s.type("\u0003")
      // The cancel is said on a line of its own, after the text shown.
      expect(yield* s.until(CANCELLED)).toBe(`\n${CANCELLED}`)
      yield* s.until("planckclaw> ")
      yield* s.type("again\r")
      yield* s.until("Whole again.")
      yield* s.until("planckclaw> ")
      yield* s.type("/quit\r")
      expect(yield* s.exit).toBe(0)
      // Only the second message and its reply were kept.
      const history = fs.readFileSync(path.join(cwd, "memory", "history.jsonl"), "utf8")
      expect(history.trim().split("\n").map((line) => JSON.parse(line))).toEqual([
        { role: "user", content: "again" },
        { role: "assistant", content: "Whole again." }
      ])
    }))

  for (const layout of ["three processes", "four processes"] as const) {
    it.live(`run --bridge none with \`planckclaw bridge cli\` on a terminal (${layout}): the bridge opts in, and the text streams there too`, () =>
      Effect.gen(function*() {
        const second = yield* Deferred.make<void>()
        const streamed = LoopbackHttp.events([
          AnthropicServer.messageStart(),
          ...AnthropicServer.blockEvents({ type: "text", pieces: ["Far away, "] }, 0).slice(0, 2),
          second,
          AnthropicServer.sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "long ago." } }),
          AnthropicServer.sse({ type: "content_block_stop", index: 0 }),
          ...AnthropicServer.messageEnd("end_turn")
        ])
        // The story streams when asked for; anything else is answered whole.
        const server = yield* AnthropicServer.make((request) => {
          const body = request.body as { readonly stream?: unknown; readonly messages: ReadonlyArray<{ readonly content: unknown }> }
          return body.stream === true && String(body.messages.at(-1)?.content) === "far away" ? streamed : AnthropicServer.text("ready.")
        })
        const cwd = yield* tempDir("planckclaw-bridge-cli-stream-")
        const runDir = path.join(cwd, "run")
        const env = Cli.runEnv(cwd, server.url, { PLANCKCLAW_RUN_DIR: runDir, SHELL: "/bin/sh", TERM: "xterm", COLUMNS: "200", LINES: "50" })
        // The agent (with its built-in brain, or with the brain as a bridge process that says it streams),
        // then the terminal as a process of its own.
        const alone = layout === "four processes"
        yield* Cli.start(["run", "--bridge", "none", ...(alone ? ["--brain", "none"] : [])], { cwd, env })
        yield* eventually("the run's pipes", () => fs.existsSync(path.join(runDir, "interact_out")) || undefined)
        if (alone) yield* Cli.start(["bridge", "anthropic"], { cwd, env })
        const s = yield* session({ cwd, env, command: ["bridge", "cli"] })
        yield* s.until("planckclaw> ")
        // Once this is answered the agent has read what the brain bridge said before it, its hello among it
        // (a request asked before that is asked whole: docs/pipes.md).
        yield* s.type("warm up\r")
        yield* s.until("ready.")
        yield* s.until("planckclaw> ")
        yield* s.type("far away\r")
        yield* s.until("Far away, ")
        expect(s.screen()).not.toContain("long ago.")
        yield* Deferred.succeed(second, undefined)
        yield* s.until("long ago.")
        yield* s.until("planckclaw> ")
        expect(s.screen().split("Far away, long ago.").length).toBe(2)
        const requests = yield* server.requests
        expect(requests.at(-1)?.body).toMatchObject({ stream: true })
      }))
  }

  it.live("a --brain executable that says it streams has its text shown piece by piece too", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir("planckclaw-run-stream-exec-")
      const gate = path.join(cwd, "gate")
      yield* mkfifo(gate)
      // Streams only when offered (PLANCKCLAW_EVENTS=1) and asked ("stream":true); the story's
      // second half waits until the test opens the gate.
      const bridge = yield* writeScript(cwd, "brain.sh", `
[ "$PLANCKCLAW_EVENTS" = 1 ] && printf '{"planckclaw_events":1}\\n\\n' > "$PLANCKCLAW_BRAIN_OUT"
delta() { printf '{"stream_event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%s"}}}\\n\\n' "$1"; }
answer() { printf '{"content":[{"type":"text","text":"%s"}],"stop_reason":"end_turn"}\\n\\n' "$1"; }
${eachBrainRequest(`  case "$payload" in
    *story*'"stream":true'*)
      delta "First part, " > "$PLANCKCLAW_BRAIN_OUT"
      read -r go < "$GATE"
      { delta "second part."; answer "First part, second part."; } > "$PLANCKCLAW_BRAIN_OUT" ;;
    *story*) answer "NOT STREAMED" > "$PLANCKCLAW_BRAIN_OUT" ;;
    *) answer "ready." > "$PLANCKCLAW_BRAIN_OUT" ;;
  esac
`)}
`)
      const env = Cli.runEnv(cwd, "http://127.0.0.1:9", { GATE: gate, SHELL: "/bin/sh", TERM: "xterm", COLUMNS: "200", LINES: "50" })
      const s = yield* session({ cwd, env, args: ["--brain", bridge] })
      yield* s.until("planckclaw> ")
      // Answered after the hello on brain_out: from here on the bridge is known to stream.
      yield* s.type("warm up\r")
      yield* s.until("ready.")
      yield* s.type("a story please\r")
      yield* s.until("First part, ")
      expect(s.screen()).not.toContain("second part.")
      yield* sh(`printf 'go\\n' > "$GATE"`, { GATE: gate })
      yield* s.until("second part.")
      yield* s.until("planckclaw> ")
      expect(s.screen()).not.toContain("NOT STREAMED")
      expect(s.screen().split("First part, second part.").length).toBe(2)
      yield* s.type("/quit\r")
      expect(yield* s.exit).toBe(0)
    }))
})
