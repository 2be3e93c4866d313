/**
 * The console's turns, in chromium (test/support/ConsoleBrowser.ts) against
 * the built `serve`: a turn cut by a stop is told as taken once the stream's
 * `accepted` event came, even before the turn told anything, and a message
 * without it as not sent; Retry after the next start shows each reply once,
 * under the same Idempotency-Key: the reply kept, no second turn. A
 * model's reply starting with "Cancelled:" is an answer, not a cancelled
 * turn, and text told around a tool line is shown once. Escape cancels a
 * turn sent with the Send button, wherever the focus is, but not from the
 * Forget dialog, which it closes. Cancelled before the agent took the
 * message (no `accepted` yet), the turn is cancelled once it does; refused
 * as too late (the agent already committing its reply), the page keeps
 * listening and shows the reply; one that could not be asked says so and
 * may be asked again.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import * as ConsoleBrowser from "../support/ConsoleBrowser.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import { eventually, tool } from "../support/Sandbox.js"
import { setup } from "../support/ServeKit.js"

const { logLines, step } = ConsoleBrowser

/** `serve` on `port`: the page's origin stays the same across a restart. */
const serveOn = (port: number, cwd: string, env: NodeJS.ProcessEnv) =>
  Effect.gen(function*() {
    const running = yield* Cli.start(["serve", "--http", `127.0.0.1:${port}`], { cwd, env })
    yield* eventually("serve to listen", () => Effect.runSync(running.stderrSoFar).includes("HTTP API on") || undefined)
    return running
  })

/** The exchanges of an agent's history.jsonl, as `role: content`. */
const stored = (agents: string, id: string) =>
  fs.readFileSync(path.join(agents, id, "history.jsonl"), "utf8").split("\n").filter((line) => line !== "").map((line) => {
    const entry = JSON.parse(line) as { role: string; content: string }
    return `${entry.role}: ${entry.content}`
  })

describe("the console's turns in chromium", () => {
  it.live("a message acknowledged is told as taken, even cut before the turn told anything, one not acknowledged as not sent; Retry after the restart shows each reply once, without a second turn", () =>
    Effect.gen(function*() {
      // The first answer to "book the table" never comes; the first to "and a taxi" stops after its first words, for good.
      const never = yield* Deferred.make<void>()
      const cut = new Set<string>()
      const { agents, box, env, server } = yield* setup((request) => {
        if (AnthropicServer.isCompaction(request)) return AnthropicServer.listingSummary(request)
        const said = AnthropicServer.lastUserText(request.body)
        const firstTime = !cut.has(said)
        cut.add(said)
        if (said === "book the table" && firstTime) return LoopbackHttp.hang
        if (said === "and a taxi" && firstTime) {
          const [start, ping, ...rest] = AnthropicServer.streamEvents([{ type: "text", pieces: ["Let me see. ", "re: and a taxi"] }])
          return LoopbackHttp.events([start!, ping!, rest[0]!, rest[1]!, never])
        }
        return AnthropicServer.text(`re: ${said}`)
      }, { PLANCKCLAW_STOP_GRACE: "1" })
      const asked = (text: string) =>
        Effect.runSync(server.requests).filter((request) => !AnthropicServer.isCompaction(request) && AnthropicServer.lastUserText(request.body) === text).length
      const port = yield* LoopbackHttp.unusedPort
      let serve = yield* serveOn(port, box.dir, env)
      // A stop (SIGTERM): the turn outlives the grace, the connection is closed; the message stays journaled.
      const stop = Effect.suspend(() => {
        serve.process.kill("SIGTERM")
        return serve.done
      })
      const page = yield* ConsoleBrowser.page()
      yield* step(() => page.goto(`http://127.0.0.1:${port}/`))
      yield* step(() => page.getByLabel("Agent id (a new one starts a new agent)").fill("bob"))
      yield* step(() => page.keyboard.press("Enter"))
      const message = page.getByLabel(/Message to bob/)
      const sendText = (text: string) => Effect.andThen(step(() => message.fill(text)), step(() => message.press("Enter")))
      const notSent = page.locator(".log > .tool", { hasText: "Not sent" })
      const lost = page.locator(".log > .tool", { hasText: "bob took the message and keeps its reply" })

      // Stopped before the turn told anything: the stream's `accepted` had come, so the page knows the agent took it.
      yield* sendText("book the table")
      yield* eventually("the hanging brain call", () => asked("book the table") === 1 || undefined)
      yield* stop
      yield* step(() => lost.waitFor())
      expect(yield* step(() => page.locator("#status").textContent())).toMatch(/^The connection to bob was lost, but it took the message/)
      expect((yield* logLines(page)).join("\n")).not.toContain("Not sent")
      serve = yield* serveOn(port, box.dir, env)
      yield* step(() => lost.getByRole("button", { name: "Retry" }).click())
      yield* step(() => page.locator(".msg.assistant", { hasText: "re: book the table" }).waitFor())

      // Stopped after the turn's first words: taken too.
      yield* sendText("and a taxi")
      yield* step(() => page.locator(".msg.assistant", { hasText: "Let me see." }).waitFor())
      yield* stop
      yield* step(() => lost.waitFor())
      // Sent while the server is down: no acknowledgement, so not sent; retried the same way.
      yield* sendText("are you there?")
      yield* step(() => notSent.waitFor())
      expect(yield* step(() => notSent.textContent())).toMatch(/^Not sent \(.+\): bob did not acknowledge it\. Retry$/)
      expect(yield* step(() => page.locator("#status").textContent())).toMatch(/^bob did not acknowledge the message/)

      serve = yield* serveOn(port, box.dir, env)
      yield* step(() => lost.getByRole("button", { name: "Retry" }).click())
      yield* step(() => page.locator(".msg.assistant", { hasText: "re: and a taxi" }).waitFor())
      yield* step(() => notSent.getByRole("button", { name: "Retry" }).click())
      yield* step(() => page.locator(".msg.assistant", { hasText: "re: are you there?" }).waitFor())
      yield* step(() => page.getByText("bob answered.").waitFor())
      // Each reply once, where its message is (the cut words gone with the line that said it was cut).
      const exchanges = ["book the table", "and a taxi", "are you there?"]
      expect(yield* logLines(page)).toEqual(exchanges.flatMap((said) => [`You:${said}`, `Agent:re: ${said}`]))
      // Answered once each, the cut ones at the next start: the retries got the replies kept under their keys.
      expect(exchanges.map(asked)).toEqual([2, 2, 1])
      expect(stored(agents, "bob")).toEqual(exchanges.flatMap((said) => [`user: ${said}`, `assistant: re: ${said}`]))
    }), 120_000)

  it.live("a stored reply starting with 'Cancelled:' is an answer, and the text around its tool line is shown once", () =>
    Effect.gen(function*() {
      const asked = "is my dentist appointment still on?"
      const { agents, box, env } = yield* setup((request) => {
        if (AnthropicServer.isCompaction(request)) return AnthropicServer.listingSummary(request)
        const last = request.body.messages[request.body.messages.length - 1]
        const afterTool = last !== undefined && Array.isArray(last.content)
        const streamed = (request.body as { readonly stream?: unknown }).stream === true
        if (afterTool) return streamed ? AnthropicServer.streamedText("Your 9am dentist ", "appointment is off.") : AnthropicServer.text("Your 9am dentist appointment is off.")
        return streamed
          ? LoopbackHttp.events(AnthropicServer.streamEvents([{ type: "text", pieces: ["Cancelled: ", "let me check."] }, { type: "tool_use", id: "t1", name: "clock", input: {} }]))
          : AnthropicServer.toolUse([{ id: "t1", name: "clock", input: {} }])
      })
      box.claw("clock.sh", `${tool("clock")}\necho noon\n`)
      const port = yield* LoopbackHttp.unusedPort
      yield* serveOn(port, box.dir, env)
      const page = yield* ConsoleBrowser.page()
      yield* step(() => page.goto(`http://127.0.0.1:${port}/`))
      yield* step(() => page.getByLabel("Agent id (a new one starts a new agent)").fill("carol"))
      yield* step(() => page.keyboard.press("Enter"))
      const message = page.getByLabel(/Message to carol/)
      yield* step(() => message.fill(asked))
      yield* step(() => message.press("Enter"))
      yield* step(() => page.getByText(/^(carol answered|Turn cancelled)/).waitFor())
      expect(yield* step(() => page.locator("#status").textContent())).toBe("carol answered.")
      expect(yield* logLines(page)).toEqual([
        `You:${asked}`,
        "Agent:Cancelled: let me check.",
        expect.stringMatching(/^✓ clock succeeded \(\d+ ms\)$/),
        "Agent:Your 9am dentist appointment is off."
      ])
      expect(stored(agents, "carol")).toEqual([`user: ${asked}`, "assistant: Cancelled: let me check.\n\nYour 9am dentist appointment is off."])
    }), 120_000)

  it.live("Escape cancels a turn sent with the Send button, the focus back in the message box; in the Forget dialog it only closes the dialog", () =>
    Effect.gen(function*() {
      const { box, env, server } = yield* setup((request) => {
        if (AnthropicServer.isCompaction(request)) return AnthropicServer.listingSummary(request)
        return AnthropicServer.lastUserText(request.body) === "hang" ? LoopbackHttp.hang : AnthropicServer.text("ok")
      })
      const port = yield* LoopbackHttp.unusedPort
      yield* serveOn(port, box.dir, env)
      const page = yield* ConsoleBrowser.page()
      yield* step(() => page.goto(`http://127.0.0.1:${port}/`))
      yield* step(() => page.getByLabel("Agent id (a new one starts a new agent)").fill("dave"))
      yield* step(() => page.keyboard.press("Enter"))
      yield* step(() => page.getByLabel(/Message to dave/).fill("hang"))
      yield* step(() => page.getByRole("button", { name: "Send" }).click())
      yield* step(() => page.getByText("dave is answering…").waitFor())
      yield* eventually("the hanging brain call", () =>
        Effect.runSync(server.requests).some((request) => AnthropicServer.lastUserText(request.body) === "hang") || undefined)
      const focused = () => step(() => page.evaluate(() => (globalThis as unknown as { document: { activeElement: { tagName: string } | null } }).document.activeElement?.tagName))
      expect(yield* focused()).toBe("TEXTAREA")

      // Escape in the dialog closes it and leaves the turn running.
      yield* step(() => page.getByRole("button", { name: "Forget…" }).click())
      yield* step(() => page.getByRole("dialog", { name: "Forget dave?" }).waitFor())
      yield* step(() => page.keyboard.press("Escape"))
      yield* step(() => page.getByText("dave was not forgotten.").waitFor())
      expect(yield* step(() => page.getByRole("button", { name: "Cancel turn" }).isEnabled())).toBe(true)

      // Then, the focus outside the message box, Escape cancels it.
      expect(yield* focused()).not.toBe("TEXTAREA")
      yield* step(() => page.keyboard.press("Escape"))
      yield* step(() => page.getByText("Turn cancelled: nothing was stored.").waitFor())
    }), 120_000)
  it.live("Cancel turn before the agent took the message cancels it once taken: the page does not stop listening and drop it", () =>
    Effect.gen(function*() {
      const { agents, box, env, server } = yield* setup((request) => {
        if (AnthropicServer.isCompaction(request)) return AnthropicServer.listingSummary(request)
        return AnthropicServer.lastUserText(request.body) === "hold on" ? LoopbackHttp.hang : AnthropicServer.text("ok")
      })
      const port = yield* LoopbackHttp.unusedPort
      yield* serveOn(port, box.dir, env)
      const page = yield* ConsoleBrowser.page()
      // The message's request is held in the page until released: the agent has not taken it (as while it compacts).
      const release = yield* Deferred.make<void>()
      const held = yield* Deferred.make<void>()
      yield* step(() =>
        page.route("**/v1/agents/erin/messages", (route) =>
          Effect.runPromise(Deferred.succeed(held, undefined).pipe(Effect.andThen(Deferred.await(release)))).then(() => route.continue())))
      yield* step(() => page.goto(`http://127.0.0.1:${port}/`))
      yield* step(() => page.getByLabel("Agent id (a new one starts a new agent)").fill("erin"))
      yield* step(() => page.keyboard.press("Enter"))
      yield* step(() => page.getByLabel(/Message to erin/).fill("hold on"))
      yield* step(() => page.keyboard.press("Enter"))
      yield* Deferred.await(held)
      yield* step(() => page.getByRole("button", { name: "Cancel turn" }).click())
      yield* step(() => page.getByText("erin has not taken the message yet: it is cancelled as soon as it does.").waitFor())
      yield* Deferred.succeed(release, undefined)
      yield* step(() => page.getByText("Turn cancelled: nothing was stored.").waitFor())
      expect(yield* logLines(page)).toEqual(["You:hold on", "Agent:Cancelled: the turn was stopped before it finished; nothing was stored."])
      expect(Effect.runSync(server.requests).filter((request) => !AnthropicServer.isCompaction(request)).length).toBeLessThanOrEqual(1)
      expect(fs.existsSync(path.join(agents, "erin", "history.jsonl")) ? stored(agents, "erin") : []).toEqual([])
    }), 120_000)

  it.live("Cancel turn refused as too late (the agent committing its reply) keeps the page listening: the reply shows, no reload needed", () =>
    Effect.gen(function*() {
      // The answer's last words wait for the test: the cancel is answered meanwhile.
      const rest = yield* Deferred.make<void>()
      const { agents, box, env } = yield* setup((request) => {
        if (AnthropicServer.isCompaction(request)) return AnthropicServer.listingSummary(request)
        const [start, ping, ...more] = AnthropicServer.streamEvents([{ type: "text", pieces: ["Booked ", "for eight."] }])
        return LoopbackHttp.events([start!, ping!, more[0]!, more[1]!, rest, ...more.slice(2)])
      })
      const port = yield* LoopbackHttp.unusedPort
      yield* serveOn(port, box.dir, env)
      const page = yield* ConsoleBrowser.page()
      // The server's answer to a cancel that comes once the turn commits its reply (TurnCancels); the window between
      // that commit and the stream's `end` is too short to hit from here, so the page's cancel is answered by the route.
      yield* step(() => page.route("**/v1/agents/fay/cancel", (route) => route.fulfill({ status: 200, contentType: "application/json", body: "{\"cancelled\":false}" })))
      yield* step(() => page.goto(`http://127.0.0.1:${port}/`))
      yield* step(() => page.getByLabel("Agent id (a new one starts a new agent)").fill("fay"))
      yield* step(() => page.keyboard.press("Enter"))
      yield* step(() => page.getByLabel(/Message to fay/).fill("book the table"))
      yield* step(() => page.keyboard.press("Enter"))
      yield* step(() => page.locator(".msg.assistant", { hasText: "Booked" }).waitFor())
      yield* step(() => page.getByRole("button", { name: "Cancel turn" }).click())
      yield* step(() => page.getByText("Too late to cancel: fay had begun to store its reply, which follows.").waitFor())
      yield* Deferred.succeed(rest, undefined)
      yield* step(() => page.getByText("fay answered.").waitFor())
      expect(yield* logLines(page)).toEqual(["You:book the table", "Agent:Booked for eight."])
      expect(stored(agents, "fay")).toEqual(["user: book the table", "assistant: Booked for eight."])
    }), 120_000)

  it.live("a Cancel turn that could not be asked (the connection failed) says so and may be pressed again, which cancels the turn", () =>
    Effect.gen(function*() {
      // The answer's last words never come: only a cancel ends the turn.
      const never = yield* Deferred.make<void>()
      const { agents, box, env } = yield* setup((request) => {
        if (AnthropicServer.isCompaction(request)) return AnthropicServer.listingSummary(request)
        const [start, ping, ...more] = AnthropicServer.streamEvents([{ type: "text", pieces: ["Thinking ", "about it."] }])
        return LoopbackHttp.events([start!, ping!, more[0]!, more[1]!, never, ...more.slice(2)])
      })
      const port = yield* LoopbackHttp.unusedPort
      yield* serveOn(port, box.dir, env)
      const page = yield* ConsoleBrowser.page()
      // The first cancel is lost on the way (the connection fails); the next reaches the server.
      let asked = 0
      yield* step(() => page.route("**/v1/agents/gus/cancel", (route) => ++asked === 1 ? route.abort("connectionfailed") : route.continue()))
      yield* step(() => page.goto(`http://127.0.0.1:${port}/`))
      yield* step(() => page.getByLabel("Agent id (a new one starts a new agent)").fill("gus"))
      yield* step(() => page.keyboard.press("Enter"))
      yield* step(() => page.getByLabel(/Message to gus/).fill("take your time"))
      yield* step(() => page.keyboard.press("Enter"))
      yield* step(() => page.locator(".msg.assistant", { hasText: "Thinking" }).waitFor())
      yield* step(() => page.getByRole("button", { name: "Cancel turn" }).click())
      yield* step(() => page.getByText(/^The turn could not be cancelled \(.+\): gus goes on with it\.$/).waitFor())
      expect(yield* step(() => page.getByRole("button", { name: "Cancel turn" }).isEnabled())).toBe(true)
      yield* step(() => page.getByRole("button", { name: "Cancel turn" }).click())
      yield* step(() => page.getByText("Turn cancelled: nothing was stored.").waitFor())
      expect(asked).toBe(2)
      expect(fs.existsSync(path.join(agents, "gus", "history.jsonl")) ? stored(agents, "gus") : []).toEqual([])
    }), 120_000)
})
