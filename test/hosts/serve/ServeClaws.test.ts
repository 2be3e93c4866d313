/**
 * Claws in `serve`: every agent's claw calls go through the one spawn helper
 * of the host's process, side by side, and each answer reaches its agent.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect } from "@effect/vitest"
import { helperPid, it } from "../../support/ProcessServices.js"
import { Context, Effect, Layer } from "effect"
import { Brain, type MessagesRequest } from "../../../src/ports/Brain.js"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import * as ScriptClaws from "../../../src/claws/ScriptClaws.js"
import * as AgentHost from "../../../src/hosts/serve/AgentHost.js"
import { tool } from "../../support/Sandbox.js"
import { settings, tempDir } from "./Kit.js"

/** Asks for the `parent` tool, then answers with what it returned. */
const toolBrain = Layer.succeed(Brain, {
  complete: (request: MessagesRequest) =>
    Effect.sync(() => {
      const last = request.messages[request.messages.length - 1]!
      const result = typeof last.content === "string"
        ? undefined
        : last.content.find((block) => block.type === "tool_result")
      if (result === undefined) return ScriptedBrain.toolUse([{ id: "tu_1", name: "parent", input: {} }])
      return ScriptedBrain.text(`claw said: ${JSON.stringify(result.content)}`)
    })
})

describe("serve with shell claws", () => {
  it.live("agents calling claws at once share the host's one spawn helper, each getting its own answer", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const claws = path.join(root, "claws")
      fs.mkdirSync(claws)
      // Sleeps a moment so the calls overlap, then prints its parent.
      fs.writeFileSync(path.join(claws, "parent.sh"), `#!/bin/sh\n${tool("parent")}\nsleep 0.2\necho "parent $PPID"\n`, { mode: 0o755 })
      const host = yield* Layer.build(
        AgentHost.layer.pipe(
          Layer.provide(Layer.merge(toolBrain, ScriptClaws.layer)),
          Layer.provide(settings({
            PLANCKCLAW_AGENTS_DIR: path.join(root, "agents"),
            PLANCKCLAW_DIR: path.join(root, "memory"),
            CLAWS_DIR: claws,
            PLANCKCLAW_PROMPT_CACHE: "0"
          }))
        )
      ).pipe(Effect.map(Context.get(AgentHost.AgentHost)))
      const ids = ["a", "b", "c", "d"]
      const replies = yield* Effect.forEach(ids, (id) => host.send(id, { text: `hello from ${id}` }), { concurrency: "unbounded" })
      const helper = yield* helperPid
      expect(helper).toBeGreaterThan(0)
      expect(helper).not.toBe(process.pid)
      for (const reply of replies) expect(reply).toEqual({ reply: `claw said: "parent ${helper}"`, stored: true })
    }))
})
