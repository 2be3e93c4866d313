/**
 * Prompt caching on the Anthropic brain, through the built command against
 * the loopback Messages API: where the breakpoints go, and that two
 * consecutive turns send the same bytes up to the earlier one's last
 * breakpoint (the cached prefix), until the anchored window moves.
 */
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { sandbox } from "../support/Sandbox.js"
import * as ScheduleTool from "../../src/schedule/ScheduleTool.js"

const MARK = ",\"cache_control\":{\"type\":\"ephemeral\"}"

const countMarks = (raw: string) => raw.split(MARK).length - 1

const run = (settings: Record<string, string>, input: string) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make((request) =>
      AnthropicServer.text(`re: ${AnthropicServer.lastUserText(request.body)}`)
    )
    const box = yield* sandbox({
      ANTHROPIC_API_KEY: "test-key-not-secret",
      ANTHROPIC_BASE_URL: server.url,
      CLAWS_DIR: path.join(Cli.REPO, "claws"),
      ...settings
    }, "planckclaw-cache-")
    const result = yield* Cli.run(["run"], { cwd: box.dir, env: box.env, input })
    expect(result.code).toBe(0)
    return (yield* server.requests).map((request) => request.rawBody)
  })

describe("prompt caching (built command)", () => {
  it.live("consecutive turns share the bytes up to the last breakpoint, until the window is re-anchored", () =>
    Effect.gen(function*() {
      const raws = yield* run({ HISTORY_KEEP: "4" }, "one\ntwo\nthree\nfour\nfive\nsix\n")
      expect(raws).toHaveLength(6)
      // Tools (sorted) first, then the system prompt, then the messages: the order the API caches in.
      const first = JSON.parse(raws[0]!) as Record<string, unknown>
      expect(Object.keys(first)).toEqual(["model", "max_tokens", "tools", "system", "messages"])
      const tools = first.tools as Array<{ name: string; cache_control?: unknown }>
      expect(tools.map((tool) => tool.name)).toEqual(["get_time", "roll_dice", "system_status", ScheduleTool.ADD, ScheduleTool.LIST, ScheduleTool.REMOVE].sort())
      // The breakpoint on the last tool, whichever it is.
      expect(tools.map((tool) => tool.cache_control)).toEqual([...tools.slice(1).map(() => undefined), { type: "ephemeral" }])
      expect(first.system).toEqual([{ type: "text", text: expect.any(String), cache_control: { type: "ephemeral" } }])
      // No history yet: two breakpoints; then three (the older history's last line).
      expect(raws.map(countMarks)).toEqual([2, 3, 3, 3, 3, 3])

      const sharedPrefix = (earlier: string, later: string) => {
        const end = earlier.lastIndexOf(MARK)
        return later.slice(0, end) === earlier.slice(0, end)
      }
      // Window (HISTORY_KEEP 4, anchored on "one"): 0, 2, 4, 6, 8 lines; the sixth turn would
      // send 10, so it is re-anchored on the last 4 ("four" …) and writes the cache anew.
      expect([1, 2, 3].map((i) => sharedPrefix(raws[i]!, raws[i + 1]!))).toEqual([true, true, true])
      expect(sharedPrefix(raws[4]!, raws[5]!)).toBe(false)
      const sixth = JSON.parse(raws[5]!) as { messages: Array<{ content: unknown }> }
      expect(sixth.messages[0]!.content).toEqual([{ type: "text", text: "four" }])
      expect(sixth.messages).toHaveLength(5)
      // Tools and system prompt are still shared: their breakpoint is still a hit.
      const systemEnd = raws[4]!.indexOf(MARK, raws[4]!.indexOf("\"system\""))
      expect(raws[5]!.slice(0, systemEnd)).toBe(raws[4]!.slice(0, systemEnd))
    }))

  it.live("PLANCKCLAW_PROMPT_CACHE=0 sends no breakpoint and the plain HISTORY_KEEP tail", () =>
    Effect.gen(function*() {
      const raws = yield* run({ HISTORY_KEEP: "2", PLANCKCLAW_PROMPT_CACHE: "0" }, "one\ntwo\nthree\n")
      expect(raws.map(countMarks)).toEqual([0, 0, 0])
      const third = JSON.parse(raws[2]!) as { system: unknown; messages: unknown }
      expect(typeof third.system).toBe("string")
      expect(third.messages).toEqual([
        { role: "user", content: "two" },
        { role: "assistant", content: "re: two" },
        { role: "user", content: "three" }
      ])
    }))
})
