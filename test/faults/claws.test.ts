/**
 * Faults of the claws: the built `planckclaw run` with claws the test writes
 * into a temp CLAWS_DIR, each misbehaving one way. The model (a loopback
 * Messages API) calls the claw, is told what happened, answers; the next
 * message proves the loop runs on; no claw process outlives its call.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type Handler, lastUserText, type RecordedRequest, replies, text, toolUse } from "../support/AnthropicServer.js"
import { tool } from "../support/Sandbox.js"
import { gone, pidIn } from "./Bounds.js"
import { answered, session } from "./Campaign.js"
import * as ScheduleTool from "../../src/schedule/ScheduleTool.js"

const TIMEOUT = 120_000

interface ToolResultBlock {
  readonly tool_use_id: string
  readonly content: string
  readonly is_error?: boolean
}

/** The tool results the agent sent back in request `index`. */
const resultsIn = (requests: ReadonlyArray<RecordedRequest>, index: number): Array<ToolResultBlock> => {
  const messages = requests[index]!.body.messages
  return messages[messages.length - 1]!.content as Array<ToolResultBlock>
}

// The schedule tools every run offers beside the claws: what these cases test is the claws'.
const scheduleTools: ReadonlyArray<string> = [ScheduleTool.ADD, ScheduleTool.LIST, ScheduleTool.REMOVE]
const toolNames = (request: RecordedRequest) =>
  (request.body.tools ?? []).map((declared) => declared.name).filter((name) => !scheduleTools.includes(name))

/** The model calls `name` once for the first message, then answers in text. */
const callOnce = (name: string, input: unknown = {}): Handler =>
  replies(toolUse([{ id: "tu_1", name, input }]), text("Here is what the tool said."), text("B"))

describe("faults: claws", () => {
  it.live("claws: a claw that hangs → timed out, its whole process group killed, no zombie left", () =>
    Effect.gen(function*() {
      const t = yield* session(callOnce("hang"), { PLANCKCLAW_CLAW_TIMEOUT: "1" }, ["first", "second"], (box) => {
        box.claw(
          "hang.sh",
          `${tool("hang")}\necho $$ > "$D/hang.pid"\nsleep 1000 &\necho $! > "$D/hang-child.pid"\nsleep 1000\n`
        )
      })
      expect(t.replies).toEqual(["Let me check.", "", "Here is what the tool said.", "B"])
      expect(resultsIn(t.requests, 1)).toEqual([
        { type: "tool_result", tool_use_id: "tu_1", content: "Error: Tool hang timed out after 1s", is_error: true }
      ])
      // Both the claw and the child it forked are gone for good: not even a zombie.
      yield* gone("the hanging claw", yield* pidIn(t.box.path("hang.pid")))
      yield* gone("the claw's background child", yield* pidIn(t.box.path("hang-child.pid")))
      expect(t.box.memoryFile("history.jsonl")).toBe(
        // The text the model wrote before its calls begins the reply (issue 48).
        answered(["first", "Let me check.\n\nHere is what the tool said."], ["second", "B"])
      )
    }), TIMEOUT)

  it.live("claws: a claw that floods its output → cut at the limit with a marker, the writer killed", () =>
    Effect.gen(function*() {
      const t = yield* session(callOnce("flood"), { PLANCKCLAW_CLAW_OUTPUT_MAX: "1000" }, ["first", "second"], (box) => {
        box.claw("flood.sh", `${tool("flood")}\necho $$ > "$D/flood.pid"\nexec yes flooding\n`)
      })
      expect(t.replies).toEqual(["Let me check.", "", "Here is what the tool said.", "B"])
      const [result] = resultsIn(t.requests, 1)
      expect(result!.is_error).toBeUndefined()
      expect(result!.content).toMatch(/^(flooding\n)+[a-z]*\n\[output truncated at 1000 bytes\]$/)
      expect(result!.content.length).toBeLessThan(1100)
      yield* gone("the flooding claw", yield* pidIn(t.box.path("flood.pid")))
    }), TIMEOUT)

  it.live("claws: a claw that floods its stderr → stopped at once with an error result saying so, the writer killed", () =>
    Effect.gen(function*() {
      // The default 30 s timeout: only the flood's stop can give this answer.
      const t = yield* session(callOnce("noisy"), {}, ["first", "second"], (box) => {
        box.claw("noisy.sh", `${tool("noisy")}\necho $$ > "$D/noisy.pid"\necho started\nexec yes complaining >&2\n`)
      })
      expect(t.replies).toEqual(["Let me check.", "", "Here is what the tool said.", "B"])
      const [result] = resultsIn(t.requests, 1)
      expect(result!.is_error).toBe(true)
      expect(result!.content).toMatch(
        /^Error: started\nstderr: (complaining\n)+[a-z]* \[…\]\n\[tool noisy was stopped: it wrote more than 1050624 bytes to stderr\]$/
      )
      yield* gone("the claw flooding stderr", yield* pidIn(t.box.path("noisy.pid")))
    }), TIMEOUT)

  it.live("claws: a claw that exits non-zero or dies by a signal → an error result with its stderr", () =>
    Effect.gen(function*() {
      const handler = replies(
        toolUse([{ id: "tu_1", name: "fail", input: {} }, { id: "tu_2", name: "crash", input: {} }]),
        text("Both failed."),
        text("B")
      )
      const t = yield* session(handler, {}, ["first", "second"], (box) => {
        box.claw("fail.sh", `${tool("fail")}\necho partial\necho "it broke" >&2\nexit 3\n`)
        box.claw("crash.sh", `${tool("crash")}\nkill -SEGV $$\n`)
      })
      expect(t.replies).toEqual(["Let me check.", "", "Both failed.", "B"])
      expect(resultsIn(t.requests, 1)).toEqual([
        {
          type: "tool_result",
          tool_use_id: "tu_1",
          content: "Error: partial\nstderr: it broke\n[tool fail exited with code 3]",
          is_error: true
        },
        { type: "tool_result", tool_use_id: "tu_2", content: "Error: [tool crash was killed by SIGSEGV]", is_error: true }
      ])
    }), TIMEOUT)

  it.live("claws: a claw that prints invalid UTF-8 → replacement characters, answered", () =>
    Effect.gen(function*() {
      const t = yield* session(callOnce("latin1"), {}, ["first", "second"], (box) => {
        box.claw("latin1.sh", `${tool("latin1")}\nprintf 'caf\\351 \\377\\376 ok \\342\\202'\n`)
      })
      expect(t.replies).toEqual(["Let me check.", "", "Here is what the tool said.", "B"])
      expect(resultsIn(t.requests, 1)[0]!.content).toBe("caf\uFFFD \uFFFD\uFFFD ok \uFFFD")
    }), TIMEOUT)

  it.live("claws: a malformed #TOOLS: line → skipped with one warning naming file and line, other tools kept", () =>
    Effect.gen(function*() {
      const t = yield* session(callOnce("good"), {}, ["first", "second"], (box) => {
        box.claw(
          "broken.sh",
          [
            tool("good"),
            "#TOOLS:{oops",
            `#TOOLS:{"description":"no name"}`,
            `#TOOLS:{"name":"schema_wrong","input_schema":{"type":"array"}}`,
            `#TOOLS:[1,2]`,
            `case "$1" in good) echo fine ;; esac`
          ].join("\n") + "\n"
        )
      })
      expect(t.replies).toEqual(["Let me check.", "", "Here is what the tool said.", "B"])
      expect(toolNames(t.requests[0]!)).toEqual(["good"])
      expect(toolNames(t.requests[2]!)).toEqual(["good"])
      expect(resultsIn(t.requests, 1)[0]!.content).toBe("fine")
      // Line 1 is #!/bin/sh, line 2 sets D. Each problem is reported once while
      // it lasts, not once per message; [1,2] holds two bad items.
      for (const [source, count] of [["broken.sh:4", 1], ["broken.sh:5", 1], ["broken.sh:6", 1], ["broken.sh:7", 2]] as const) {
        const warnings = t.result.stderr.split("\n").filter((entry) => entry.includes(source))
        expect(warnings, `${source} in\n${t.result.stderr}`).toHaveLength(count)
        for (const warning of warnings) expect(warning).toMatch(/^planckclaw warn/)
      }
    }), TIMEOUT)

  it.live("claws: a tool declared by two claws → the first file wins, with a warning", () =>
    Effect.gen(function*() {
      const t = yield* session(callOnce("dup"), {}, ["first", "second"], (box) => {
        box.claw("a.sh", `${tool("dup", "from a")}\necho "a ran"\n`)
        box.claw("b.sh", `${tool("dup", "from b")}\n${tool("only_b")}\necho "b ran"\n`)
      })
      expect(t.replies).toEqual(["Let me check.", "", "Here is what the tool said.", "B"])
      expect(t.requests[0]!.body.tools?.filter((declared) => !scheduleTools.includes(declared.name))).toEqual([
        { name: "dup", description: "from a", input_schema: { type: "object", properties: {} } },
        { name: "only_b", description: "only_b tool", input_schema: { type: "object", properties: {} } }
      ])
      expect(resultsIn(t.requests, 1)[0]!.content).toBe("a ran")
      expect(t.result.stderr).toMatch(/b\.sh:3.*"dup" is already declared at .*a\.sh:3; the first declaration wins/)
    }), TIMEOUT)

  it.live("claws: tool names outside ^[A-Za-z0-9_-]{1,64}$ → rejected with warnings, valid ones kept", () =>
    Effect.gen(function*() {
      const bad = ["bad name!", "x".repeat(65), "", "semi;colon", "tab\tname", "héllo", "new\nline"]
      const handler: Handler = (request, index) =>
        index === 0
          ? toolUse([{ id: "tu_1", name: "bad name!", input: {} }, { id: "tu_2", name: "x".repeat(64), input: {} }])
          : text(`re: ${lastUserText(request.body)}`)
      const t = yield* session(handler, {}, ["first", "second"], (box) => {
        box.claw(
          "names.sh",
          [...bad.map((name) => `#TOOLS:${JSON.stringify({ name, description: "bad" })}`), tool("x".repeat(64))].join(
            "\n"
          ) + `\necho "long name ran"\n`
        )
      })
      expect(t.replies).toEqual(["Let me check.", "", "re: first", "re: second"])
      expect(toolNames(t.requests[0]!)).toEqual(["x".repeat(64)])
      expect(resultsIn(t.requests, 1)).toEqual([
        { type: "tool_result", tool_use_id: "tu_1", content: "Unknown tool: bad name!", is_error: true },
        { type: "tool_result", tool_use_id: "tu_2", content: "long name ran" }
      ])
      for (let lineNo = 3; lineNo <= bad.length + 2; lineNo++) {
        expect(t.result.stderr).toMatch(new RegExp(`names\\.sh:${lineNo}: invalid tool definition`))
      }
    }), TIMEOUT)

  it.live("claws: a claw that leaves a background child holding its stdout → answered at once, child killed", () =>
    Effect.gen(function*() {
      const t = yield* session(callOnce("leaky"), {}, ["first", "second"], (box) => {
        box.claw("leaky.sh", `${tool("leaky")}\nsleep 1000 &\necho $! > "$D/leaky-child.pid"\necho started\n`)
      })
      expect(t.replies).toEqual(["Let me check.", "", "Here is what the tool said.", "B"])
      expect(resultsIn(t.requests, 1)[0]!.content).toBe("started")
      yield* gone("the claw's background child", yield* pidIn(t.box.path("leaky-child.pid")))
    }), TIMEOUT)

  it.live("claws: CLAWS_DIR missing → answered without tools, with a warning", () =>
    Effect.gen(function*() {
      const t = yield* session(replies(text("A"), text("B")), { CLAWS_DIR: "/nonexistent/claws" }, ["first", "second"])
      expect(t.replies).toEqual(["A", "B"])
      // No claw's tool: only the schedule tools every run offers.
      expect(t.requests[0]!.body.tools?.map((declared) => declared.name)).toEqual(scheduleTools)
      expect(t.result.stderr).toContain("cannot read the claws directory")
    }), TIMEOUT)
})
