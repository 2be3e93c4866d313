/**
 * The built `serve` serves the console's files at / with a strict CSP, lets
 * its own page (Origin = the server's own) call the API while other origins
 * stay refused, and `--no-console` serves the API alone.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { eventually } from "../support/Sandbox.js"
import { setup } from "../support/ServeKit.js"

const started = (cwd: string, env: NodeJS.ProcessEnv, extra: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0", ...extra], { cwd, env })
    const port = yield* eventually("serve to say where it listens", () => /HTTP API on 127\.0\.0\.1:(\d+)/.exec(Effect.runSync(running.stderrSoFar))?.[1])
    return `http://127.0.0.1:${port}`
  })

const fetchOf = (url: string, init: RequestInit = {}) => Effect.promise(() => fetch(url, init))

const postFrom = (base: string, origin: string) =>
  fetchOf(`${base}/v1/agents/dave/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", origin },
    body: JSON.stringify({ text: "hi" })
  })

describe("the console's files on serve (built command)", () => {
  it.live("serves /, its script and style sheet under a strict CSP; only its own origin may call the API", () =>
    Effect.gen(function*() {
      const { box, env } = yield* setup(AnthropicServer.echo)
      const base = yield* started(box.dir, env, [])
      for (const [file, type] of [["/", "text/html"], ["/console.js", "text/javascript"], ["/console.css", "text/css"]] as const) {
        const answer = yield* fetchOf(`${base}${file}`)
        expect([answer.status, answer.headers.get("content-type")]).toEqual([200, expect.stringContaining(type)])
        expect(answer.headers.get("content-security-policy")).toMatch(/^default-src 'self'; script-src 'self';/)
        expect(answer.headers.get("x-content-type-options")).toBe("nosniff")
      }
      expect((yield* postFrom(base, base)).status).toBe(200)
      const foreign = yield* postFrom(base, "http://127.0.0.1:1")
      expect([foreign.status, ((yield* Effect.promise(() => foreign.json())) as any).error]).toEqual([403, "cross-origin"])
    }))

  it.live("--no-console: / is the API's 404, and no web page may call the API", () =>
    Effect.gen(function*() {
      const { box, env } = yield* setup(AnthropicServer.echo)
      const base = yield* started(box.dir, env, ["--no-console"])
      expect((yield* fetchOf(`${base}/`)).status).toBe(404)
      expect((yield* fetchOf(`${base}/console.js`)).status).toBe(404)
      expect((yield* postFrom(base, base)).status).toBe(403)
    }))
})
