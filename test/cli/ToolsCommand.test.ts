/**
 * `planckclaw tools` (the built command) lists what an agent is offered:
 * the claws' tools, then the schedule tools `run` and `serve` give every
 * agent beside them, and says so when a claw's tool of the same name is
 * hidden by one of those (the agent's `/tools` shows the same set).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Cli from "../support/Cli.js"
import { sandbox } from "../support/Sandbox.js"

const claw = (name: string, description: string) =>
  `#!/bin/sh\n#TOOLS:${JSON.stringify({ name, description, input_schema: { type: "object", properties: {} } })}\necho ok\n`

describe("planckclaw tools", () => {
  it.live("lists the schedule tools beside the claws', and a claw's tool they hide", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({}, "planckclaw-tools-")
      box.claw("weather.sh", claw("weather", "Today's weather"))
      box.claw("mine.sh", claw("schedule_list", "My own schedule list"))
      const result = yield* Cli.run(["tools"], { cwd: box.dir, env: box.env })
      expect(result.code).toBe(0)
      const lines = result.stdout.split("\n")
      const builtIn = lines.indexOf("Built in, beside the claws (the agent's schedule: planckclaw help schedule):")
      expect(lines.indexOf("  weather  Today's weather")).toBeGreaterThan(0)
      expect(builtIn).toBeGreaterThan(lines.indexOf("  weather  Today's weather"))
      expect(lines.slice(builtIn + 1, builtIn + 5)).toEqual([
        "  schedule_add  Schedule a message to yourself: at that time you receive `text` as a new message and your reply goes to `to`.",
        "  schedule_list  List your scheduled messages, each with its id, when, next run, last run and destination; and the time now.",
        "  schedule_remove  Remove one of your scheduled messages by its id (as schedule_list shows it).",
        "  the claws' schedule_list is hidden by this one: rename it to offer it"
      ])
      expect(result.stderr).toBe("")
    }), 30_000)

  it.live("lists a declaration whose input schema MCP and the model APIs refuse as skipped, with its line and what is wrong", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({}, "planckclaw-tools-bad-schema-")
      box.claw("weather.sh", `#TOOLS:{"name":"weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":"city"}}\necho sunny\n`)
      const result = yield* Cli.run(["tools"], { cwd: box.dir, env: box.env })
      const lines = result.stdout.split("\n")
      expect(lines.slice(lines.indexOf("Skipped 1 declaration:"), lines.indexOf("Skipped 1 declaration:") + 2)).toEqual([
        "Skipped 1 declaration:",
        `  ${box.path("claws/weather.sh")}:3: invalid tool definition: "required" must be an array of property names (at input_schema.required)`
      ])
    }), 30_000)
})
