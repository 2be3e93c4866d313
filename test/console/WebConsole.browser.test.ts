/**
 * The web console in a real browser: Debian's chromium (/usr/bin/chromium,
 * installed by .ci/run) driven by playwright-core, against the built
 * `planckclaw serve` with a token and an Anthropic stand-in on loopback.
 * Signs in (a wrong token refused), lists and searches agents, pages an
 * agent's history by scrolling up, chats with a new agent (a tool line with
 * its outcome, a reply seen while it is still being written), compacts,
 * forgets after a confirmation, cancels a turn, lists an agent's schedule
 * with its next run (none for another), reads usage equal to the
 * ledgers; and checks the page's CSP, its weight, and that nothing left loopback.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as zlib from "node:zlib"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { CHROMIUM, page as chromiumPage } from "../support/ConsoleBrowser.js"
import * as LoopbackHttp from "../support/LoopbackHttp.js"
import { eventually, tool } from "../support/Sandbox.js"
import { setup, startServe } from "../support/ServeKit.js"

/** The page's globals, as a function run in the page sees them (the test's own types have no DOM; the cast is erased, so the function runs as written). */
interface PageGlobals {
  readonly document: { querySelectorAll(selector: string): { readonly length: number }; readonly documentElement: { readonly scrollWidth: number } }
  readonly sessionStorage: { readonly length: number }
  readonly localStorage: { readonly length: number }
}
/** The stand-in: a tool call for the time, a story held mid-sentence until `storyGate`, a turn that never ends for "hang". */
const brain = (storyGate: Deferred.Deferred<void>): AnthropicServer.Handler => (request) => {
  if (AnthropicServer.isCompaction(request)) return AnthropicServer.listingSummary(request)
  const said = AnthropicServer.lastUserText(request.body)
  const last = request.body.messages[request.body.messages.length - 1]
  const afterTool = last !== undefined && Array.isArray(last.content)
  const streamed = (request.body as { readonly stream?: unknown }).stream === true
  if (said === "hang") return LoopbackHttp.hang
  if (said === "what time is it?") {
    if (afterTool) return streamed ? AnthropicServer.streamedText("It is ", "noon.") : AnthropicServer.text("It is noon.")
    return streamed
      ? LoopbackHttp.events(AnthropicServer.streamEvents([{ type: "text", pieces: ["Let me check."] }, { type: "tool_use", id: "t1", name: "clock", input: {} }]))
      : AnthropicServer.toolUse([{ id: "t1", name: "clock", input: {} }])
  }
  if (said === "tell me a story" && streamed) {
    const [start, ping, ...rest] = AnthropicServer.streamEvents([{ type: "text", pieces: ["Once upon ", "a time."] }])
    // After the block's start and its first piece, the rest waits for the gate.
    return LoopbackHttp.events([start!, ping!, rest[0]!, rest[1]!, storyGate, ...rest.slice(2)])
  }
  return AnthropicServer.text(`re: ${said}`)
}

describe("the web console in chromium", () => {
  it.live("signs in, lists, chats with streaming and tools, pages history, shows schedules, compacts, forgets, cancels, shows usage", () =>
    Effect.gen(function*() {
      expect(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: .ci/run installs it (apt-get install chromium)`).toBe(true)
      const storyGate = yield* Deferred.make<void>()
      const token = `test-token-${crypto.randomUUID()}`
      const { agents, box, env, server } = yield* setup(brain(storyGate), { PLANCKCLAW_HTTP_TOKEN: token })
      box.claw("clock.sh", `${tool("clock")}\necho noon\n`)
      const serve = yield* startServe(box.dir, env)
      const auth = { authorization: `Bearer ${token}` }
      // Alice has 40 exchanges (80 lines) to page through; carol exists too.
      for (let n = 0; n < 40; n++) {
        yield* Effect.promise(() =>
          fetch(`${serve.base}/v1/agents/alice/messages`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ text: `note ${n}` }) }))
      }
      yield* Effect.promise(() =>
        fetch(`${serve.base}/v1/agents/carol/messages`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ text: "hi" }) }))

      // Alice has a schedule, added by the built command: an hourly check.
      const added = yield* Cli.run(["schedule", "add", "--agent", "alice", "--every", "1h", "--to", "none", "check the build"], { cwd: box.dir, env })
      expect(added.code, added.stderr).toBe(0)
      const hourly = (JSON.parse(fs.readFileSync(path.join(agents, "alice", "schedules.json"), "utf8")) as { entries: Array<{ id: string; created: string }> }).entries[0]!

      // Another origin is still refused, with the token too.
      const foreign = yield* Effect.promise(() => fetch(`${serve.base}/v1/agents`, { headers: { ...auth, origin: "http://attacker.example" } }))
      expect(foreign.status).toBe(403)

      const page = yield* chromiumPage({ viewport: { width: 1000, height: 800 } })
      const requested: Array<string> = []
      const cspViolations: Array<string> = []
      page.on("request", (request) => requested.push(request.url()))
      page.on("console", (message) => {
        if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text())
      })
      const run = <A>(step: () => Promise<A>) => Effect.promise(step)

      const loaded = yield* run(() => page.goto(`${serve.base}/`))
      const csp = loaded!.headers()["content-security-policy"] ?? ""
      expect(csp).toContain("default-src 'self'")
      expect(csp).toContain("script-src 'self'")
      expect(csp).not.toContain("unsafe-inline")
      const html = yield* run(() => loaded!.text())
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)

      // Sign in: a wrong token is said so; the right one is kept in sessionStorage only.
      yield* run(() => page.getByLabel("Token (PLANCKCLAW_HTTP_TOKEN)").fill("not-the-token"))
      yield* run(() => page.getByRole("button", { name: "Sign in" }).click())
      yield* run(() => page.getByText("That token is wrong").waitFor())
      yield* run(() => page.getByLabel("Token (PLANCKCLAW_HTTP_TOKEN)").fill(token))
      yield* run(() => page.keyboard.press("Enter"))
      yield* run(() => page.getByRole("button", { name: "Chat with alice" }).waitFor())
      const storage = yield* run(() => page.evaluate(() => ({ session: (globalThis as unknown as PageGlobals).sessionStorage.length, local: (globalThis as unknown as PageGlobals).localStorage.length })))
      expect(storage).toEqual({ session: 1, local: 0 })

      // Every field has a label a screen reader reads, and every button a name.
      const unlabelled = () => page.evaluate(() => {
        const { document } = globalThis as unknown as { document: { querySelectorAll(selector: string): Iterable<{ readonly labels: { readonly length: number } | null; readonly outerHTML: string; readonly textContent: string | null; getAttribute(name: string): string | null }> } }
        return [
          ...[...document.querySelectorAll("input, textarea")].filter((field) => (field.labels?.length ?? 0) === 0).map((field) => field.outerHTML),
          ...[...document.querySelectorAll("button")].filter((button) => (button.textContent ?? "").trim() === "" && button.getAttribute("aria-label") === null).map((button) => button.outerHTML)
        ]
      })
      expect(yield* run(unlabelled)).toEqual([])

      // The list, searched.
      yield* run(() => page.getByRole("button", { name: "Chat with carol" }).waitFor())
      yield* run(() => page.getByLabel("Search agents by id").fill("car"))
      yield* run(() => page.getByRole("button", { name: "Chat with alice" }).waitFor({ state: "detached" }))
      expect(yield* run(() => page.getByRole("button", { name: "Chat with carol" }).isVisible())).toBe(true)
      yield* run(() => page.getByLabel("Search agents by id").fill(""))

      // Alice's history: the newest page first, earlier pages as the log is scrolled up.
      yield* run(() => page.getByRole("button", { name: "Chat with alice" }).click())
      const log = page.getByRole("log", { name: "Conversation with alice" })
      yield* run(() => log.getByText("re: note 39").waitFor())
      expect(yield* run(() => log.locator(".msg").count())).toBe(30)
      for (const shown of [60, 80]) {
        yield* run(() => log.evaluate((element) => { element.scrollTop = 0; element.dispatchEvent(new Event("scroll")) }))
        yield* run(() => page.waitForFunction((count) => (globalThis as unknown as PageGlobals).document.querySelectorAll(".log .msg").length === count, shown))
      }
      expect(yield* run(() => log.locator(".msg").first().textContent())).toBe("You:note 0")
      expect(yield* run(() => page.getByRole("button", { name: "No earlier messages" }).isDisabled())).toBe(true)

      // Her schedule, opened from the keyboard: the entry with its next run in local time, and no last run yet; at phone width too.
      yield* run(() => page.getByText("Schedules", { exact: true }).focus())
      yield* run(() => page.keyboard.press("Enter"))
      const scheduled = page.getByRole("region", { name: "Schedules of alice" }).locator("tr", { hasText: "check the build" })
      yield* run(() => scheduled.waitFor())
      const nextLocal = yield* run(() => page.evaluate((iso) => new Date(iso).toLocaleString(), new Date(Date.parse(hourly.created) + 3_600_000).toISOString()))
      expect(yield* run(() => scheduled.locator("td").allTextContents())).toEqual(["every 1h", nextLocal, "never", "memory only", hourly.id])
      yield* run(() => page.setViewportSize({ width: 360, height: 740 }))
      expect(yield* run(() => page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth))).toBeLessThanOrEqual(360)
      yield* run(() => page.setViewportSize({ width: 1000, height: 800 }))

      // A new agent, from the keyboard: a tool line with its outcome, then the reply.
      yield* run(() => page.getByRole("button", { name: "Agents" }).first().click())
      yield* run(() => page.getByLabel("Agent id (a new one starts a new agent)").fill("bob"))
      yield* run(() => page.keyboard.press("Enter"))
      const message = page.getByLabel(/Message to bob/)
      yield* run(() => message.fill("what time is it?"))
      yield* run(() => message.press("Enter"))
      yield* run(() => page.getByText("✓ clock succeeded").waitFor())
      yield* run(() => page.getByText("bob answered.").waitFor())
      // The text before the tool call, its line, then the text after it.
      expect(yield* run(() => page.locator(".log > *").evaluateAll((elements) => elements.slice(-4).map((element) => element.textContent)))).toEqual([
        "You:what time is it?",
        "Agent:Let me check.",
        expect.stringMatching(/^✓ clock succeeded \(\d+ ms\)$/),
        "Agent:It is noon."
      ])

      expect(yield* run(unlabelled)).toEqual([])

      // The reply shows while it is still being written.
      yield* run(() => message.fill("tell me a story"))
      yield* run(() => message.press("Enter"))
      yield* run(() => page.locator(".msg.assistant .text").last().getByText("Once upon").waitFor())
      expect(yield* run(() => page.locator(".msg.assistant .text").last().textContent())).toBe("Once upon ")
      yield* Deferred.succeed(storyGate, undefined)
      yield* run(() => page.locator(".msg.assistant .text").last().getByText("Once upon a time.").waitFor())

      // Its soul and summary, read-only.
      yield* run(() => page.getByText("Soul and summary (read-only)").click())
      yield* run(() => page.getByLabel("Soul of bob").getByText("You are a helpful personal assistant.").waitFor())
      expect(yield* run(() => page.getByLabel("Summary of bob").textContent())).toBe("(no summary yet)")
      yield* run(() => page.getByText("Schedules", { exact: true }).click())
      yield* run(() => page.getByText(/^bob has no schedule\. Add one with planckclaw schedule add --agent bob/).waitFor())

      // Compact now, then forget after a confirmation naming the agent.
      yield* run(() => page.getByRole("button", { name: "Compact now" }).click())
      yield* run(() => page.getByText(/^bob (compacted|had nothing to compact)/).waitFor())
      yield* run(() => page.getByRole("button", { name: "Forget…" }).click())
      const dialog = page.getByRole("dialog", { name: "Forget bob?" })
      yield* run(() => dialog.waitFor())
      yield* run(() => dialog.getByRole("button", { name: "Keep it" }).click())
      yield* run(() => page.getByText("bob was not forgotten.").waitFor())
      expect(fs.readFileSync(path.join(agents, "bob", "history.jsonl"), "utf8")).toContain("Once upon a time.")
      yield* run(() => page.getByRole("button", { name: "Forget…" }).click())
      yield* run(() => dialog.getByRole("button", { name: "Forget bob" }).click())
      yield* run(() => page.getByText(/^bob: Forgotten/).waitFor())
      expect(fs.existsSync(path.join(agents, "bob", "history.jsonl")) ? fs.readFileSync(path.join(agents, "bob", "history.jsonl"), "utf8") : "").toBe("")

      // A turn cancelled while the brain has not answered: the agent stops it, stores nothing, and answers the next message.
      yield* run(() => message.fill("hang"))
      yield* run(() => message.press("Enter"))
      yield* run(() => page.getByText("bob is answering…").waitFor())
      yield* eventually("the hanging brain call", () =>
        Effect.runSync(server.requests).some((request) => AnthropicServer.lastUserText(request.body) === "hang") || undefined)
      yield* run(() => page.getByRole("button", { name: "Cancel turn" }).click())
      yield* run(() => page.getByText("Turn cancelled: nothing was stored.").waitFor())
      expect(yield* run(() => page.locator(".msg.assistant .text").last().textContent())).toMatch(/^Cancelled: the turn was stopped/)
      yield* run(() => message.fill("after the cancel"))
      yield* run(() => message.press("Enter"))
      yield* run(() => page.locator(".msg.assistant .text").last().getByText("re: after the cancel").waitFor())
      expect(fs.readFileSync(path.join(agents, "bob", "history.jsonl"), "utf8")).not.toContain("hang")
      expect(fs.readFileSync(path.join(agents, "bob", "history.jsonl"), "utf8")).toContain("after the cancel")

      // Usage: the figures are the ledgers'.
      yield* run(() => page.getByRole("button", { name: "Usage" }).click())
      yield* run(() => page.getByText(/^Usage from/).waitFor())
      const ledger = ["alice", "bob", "carol"].flatMap((id) => {
        const file = path.join(agents, id, "usage.jsonl")
        return fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line)) : []
      })
      const sum = (key: string) => ledger.reduce((total, line) => total + (line[key] as number), 0)
      const totals = yield* run(() => page.locator("tfoot td").allTextContents())
      expect(totals.slice(0, 5).map(Number)).toEqual([ledger.length, sum("input"), sum("output"), sum("cache_write"), sum("cache_read")])
      expect(ledger.length).toBeGreaterThan(40)
      // One row per agent and day: alice's shows her own ledger's count.
      const aliceRow = yield* run(() => page.getByRole("row", { name: /^alice / }).locator("td").allTextContents())
      expect(Number(aliceRow[1])).toBe(fs.readFileSync(path.join(agents, "alice", "usage.jsonl"), "utf8").trim().split("\n").length)
      yield* run(() => page.getByLabel("Only agents whose id holds").fill("bo"))
      yield* run(() => page.getByRole("row", { name: /^alice / }).waitFor({ state: "detached" }))
      expect(yield* run(() => page.getByRole("row", { name: /^bob / }).isVisible())).toBe(true)

      // At phone width nothing scrolls sideways but the tables' own boxes.
      yield* run(() => page.setViewportSize({ width: 360, height: 740 }))
      expect(yield* run(() => page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth))).toBeLessThanOrEqual(360)

      expect(cspViolations).toEqual([])
      expect(requested.filter((url) => !url.startsWith(`${serve.base}/`))).toEqual([])
      expect((yield* server.requests).length).toBeGreaterThan(0)
    }), 120_000)

  it("weighs at most 150 KB gzipped, with no inline script", () => {
    const dir = path.join(import.meta.dirname, "..", "..", "dist", "web-console")
    const files = fs.readdirSync(dir)
    expect(files.sort()).toEqual(["console.css", "console.js", "index.html"])
    const gzipped = files.reduce((sum, name) => sum + zlib.gzipSync(fs.readFileSync(path.join(dir, name))).length, 0)
    expect(gzipped).toBeLessThanOrEqual(150 * 1024)
  })
})
