/**
 * The console's chat log after a compaction, in chromium (test/support/ConsoleBrowser.ts)
 * against the built `serve`: a compaction rewrites history.jsonl, so the
 * positions earlier pages are asked from point elsewhere in it. After the
 * page's own Compact now the log starts again from the newest page; after a
 * compaction it did not see (the agent's own, or another client's), the next
 * earlier page tells it (it does not go on from the log, or its cursor,
 * inside a line of the new file, is refused) and the log starts again too.
 * Either way the log shows the history file's entries once each, in order.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as ConsoleBrowser from "../support/ConsoleBrowser.js"
import { postMessage, setup, startServe } from "../support/ServeKit.js"

const { step } = ConsoleBrowser

describe("the console's chat log after a compaction", () => {
  it.live("shows the history once, in order, after Compact now and after a compaction the page did not see", () =>
    Effect.gen(function*() {
      const { agents, box, env } = yield* setup(AnthropicServer.echo)
      const serve = yield* startServe(box.dir, env)
      // history.jsonl's lines as the log shows them, oldest first.
      const fileLines = () =>
        fs.readFileSync(path.join(agents, "alice", "history.jsonl"), "utf8").split("\n").filter((line) => line !== "").map((line) => {
          const entry = JSON.parse(line) as { role: string; content: string }
          return `${entry.role === "user" ? "You:" : "Agent:"}${entry.content}`
        })
      for (let n = 0; n < 40; n++) yield* postMessage(serve.base, "alice", `note ${n}`)

      const page = yield* ConsoleBrowser.page()
      const log = page.getByRole("log", { name: "Conversation with alice" })
      const shown = () => step(() => log.locator(".msg").allTextContents())
      const shownAtLeast = (count: number) =>
        step(() => page.waitForFunction((count) => (globalThis as unknown as { document: { querySelectorAll(selector: string): { length: number } } }).document.querySelectorAll(".log .msg").length >= count, count))
      yield* step(() => page.goto(`${serve.base}/`))
      yield* step(() => page.getByRole("button", { name: "Chat with alice" }).click())
      yield* step(() => log.getByText("re: note 39").waitFor())

      // Compact now: 80 lines, 40 kept; the log is the newest page of the new file, then the 10 lines before it.
      yield* step(() => page.getByRole("button", { name: "Compact now" }).click())
      yield* step(() => page.getByText(/^alice compacted/).waitFor())
      expect(fileLines()).toHaveLength(40)
      expect(yield* shown()).toEqual(fileLines().slice(10))
      yield* step(() => page.getByRole("button", { name: "Load earlier messages" }).click())
      yield* shownAtLeast(40)
      expect(yield* shown()).toEqual(fileLines())
      yield* step(() => page.getByRole("button", { name: "No earlier messages" }).waitFor())

      // Opened again on 100 lines (30 shown), then compacted by another client: the next earlier page is not asked from a stale place.
      for (let n = 40; n < 70; n++) yield* postMessage(serve.base, "alice", `note ${n}`)
      yield* step(() => page.getByRole("button", { name: "Agents" }).first().click())
      yield* step(() => page.getByRole("button", { name: "Chat with alice" }).click())
      yield* step(() => log.getByText("re: note 69").waitFor())
      expect(yield* shown()).toEqual(fileLines().slice(70))
      const compacted = yield* step(() => fetch(`${serve.base}/v1/agents/alice/compact`, { method: "POST" }))
      expect(compacted.status).toBe(200)
      expect(fileLines()).toHaveLength(40)
      yield* step(() => page.getByRole("button", { name: "Load earlier messages" }).click())
      yield* step(() => page.getByText("alice's history was compacted meanwhile: its newest messages are shown again.").waitFor())
      expect(yield* shown()).toEqual(fileLines().slice(10))
      yield* step(() => page.getByRole("button", { name: "Load earlier messages" }).click())
      yield* shownAtLeast(40)
      expect(yield* shown()).toEqual(fileLines())
    }), 120_000)

  it.live("a cursor the server refuses as inside a line (left by a compaction the page did not see) starts the log again from the newest page", () =>
    Effect.gen(function*() {
      const { box, env } = yield* setup(AnthropicServer.echo)
      const serve = yield* startServe(box.dir, env)
      for (let n = 0; n < 20; n++) yield* postMessage(serve.base, "bea", `note ${n}`)
      const page = yield* ConsoleBrowser.page()
      const log = page.getByRole("log", { name: "Conversation with bea" })
      const shown = () => step(() => log.locator(".msg").allTextContents())
      const newest = Array.from({ length: 15 }, (_, i) => i + 5).flatMap((n) => [`You:note ${n}`, `Agent:re: note ${n}`])
      yield* step(() => page.goto(`${serve.base}/`))
      yield* step(() => page.getByRole("button", { name: "Chat with bea" }).click())
      yield* step(() => log.getByText("re: note 19").waitFor())
      expect(yield* shown()).toEqual(newest)
      // The next page's cursor lands inside the first line, as one taken before a compaction can: the server refuses it.
      const earlier = "**/v1/agents/bea/history?*before=*"
      yield* step(() => page.route(earlier, (route) => route.continue({ url: route.request().url().replace(/before=\d+/u, "before=1") })))
      yield* step(() => page.getByRole("button", { name: "Load earlier messages" }).click())
      yield* step(() => page.getByText("bea's history was compacted meanwhile: its newest messages are shown again.").waitFor())
      expect(yield* shown()).toEqual(newest)
      yield* step(() => page.unroute(earlier))
      yield* step(() => page.getByRole("button", { name: "Load earlier messages" }).click())
      yield* step(() => page.getByRole("button", { name: "No earlier messages" }).waitFor())
      expect(yield* shown()).toEqual(Array.from({ length: 20 }, (_, n) => [`You:note ${n}`, `Agent:re: note ${n}`]).flat())
    }), 120_000)
})
