/**
 * `planckclaw run` on a terminal streams the model's text through the brain
 * pipes: its built-in brain bridge sends the text as event frames on
 * brain_out (asked with `"stream":true`), and each piece is on the screen
 * while the loopback brain still holds the rest of its answer back.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import { session } from "../support/PtySession.js"
import { tempDir } from "../support/Sandbox.js"

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
})
