/**
 * A soul or summary over its limit (256 KiB) found while running: the turn
 * says what is wrong, not the apology for an outage, logs the file, and
 * asks no brain; mended, the next turn is answered. The refusals at start
 * (run, serve, compact, doctor) are in test/memory/PromptFilesCli.test.ts.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { APOLOGY } from "../../src/agent/Agent.js"
import { text } from "../../src/brain/ScriptedBrain.js"
import { PROMPT_FILE_MAX_BYTES } from "../../src/memory/PromptFiles.js"
import { isFailureReply } from "../../src/agent/Turn.js"
import { harness } from "../support/Harness.js"
import { captureLogs } from "../support/LogCapture.js"
import { echoBrain, startHost, tempDir } from "../hosts/serve/Kit.js"

const oversize = "x".repeat(PROMPT_FILE_MAX_BYTES + 1)

describe("a soul or summary over its limit while running", () => {
  for (const file of ["soul.md", "summary.md"]) {
    it.effect(`${file}: the reply names it and its limit, the log its path; no brain is asked until it is mended`, () =>
      Effect.gen(function*() {
        const logs = yield* captureLogs
        const h = yield* harness({ soul: "You are Planck.", script: [text("one"), text("two")] }).pipe(Effect.provide(logs.layer))
        expect((yield* h.say("hi")).text).toBe("one")
        yield* h.write(file, oversize)
        const refused = (yield* h.say("again").pipe(Effect.provide(logs.layer))).text
        expect(refused).not.toBe(APOLOGY)
        expect(refused).toBe(`I can't answer: a file of my memory is unusable (${file} is 257 KiB, over the 256 KiB limit). The log names the file to fix.`)
        expect(isFailureReply(refused)).toBe(true)
        const logged = logs.lines.find((entry) => entry.startsWith("ERROR turn failed:"))
        expect(logged).toContain(`${path.join(h.directory, file)} is ${oversize.length} bytes`)
        expect(logged).toContain("at most 262144 bytes (256 KiB)")
        expect(yield* h.requests).toHaveLength(1)
        // Nothing of the refused exchange is stored.
        expect(h.read("history.jsonl")).not.toContain("again")
        yield* h.write(file, "short again")
        expect((yield* h.say("third")).text).toBe("two")
      }))
  }

  it.effect("serve: the host's default soul, for an agent without its own, likewise", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const brain = echoBrain()
      const agents = yield* startHost(root, brain.layer)
      expect((yield* agents.send("alice", { text: "hi" })).reply).toBe("echo hi")
      fs.mkdirSync(path.join(root, "memory"), { recursive: true })
      fs.writeFileSync(path.join(root, "memory", "soul.md"), oversize)
      const refused = yield* agents.send("alice", { text: "again" })
      expect(refused).toEqual({
        reply: "I can't answer: a file of my memory is unusable (soul.md is 257 KiB, over the 256 KiB limit). The log names the file to fix.",
        stored: false,
        notAnswered: "failed"
      })
      expect(brain.requests).toHaveLength(1)
    }))
})
