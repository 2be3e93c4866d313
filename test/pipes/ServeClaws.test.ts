/**
 * The built-in claws bridge's own path (ServeClaws): a burst of requests
 * larger than it holds at once is answered whole and in order (the pipe
 * keeps the rest meanwhile), and the catalogue's kept JSON follows a changed
 * catalogue.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Queue, Result } from "effect"
import type { ToolDefinition } from "../../src/ports/Claws.js"
import { decodeCatalog } from "../../src/pipes/FifoClaws.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import { encodeClawAnswer } from "../../src/pipes/ClawFrame.js"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { catalogFrameMemo, serveClaws } from "../../src/pipes/ServeClaws.js"
import { blocksFrom, tempDir } from "../support/FifoKit.js"

const runtime = Effect.flatMap(tempDir, (dir) => makeRuntimeDir(path.join(dir, "run")))

const echo: InMemoryClaws.InMemoryTool = {
  definition: { name: "echo", description: "Echo", input_schema: { type: "object" } },
  run: (input) => Effect.succeed({ content: JSON.stringify(input), isError: false })
}

describe("ServeClaws", () => {
  it.effect("answers a burst of 300 requests in one write, every one, in order", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      yield* Effect.forkScoped(serveClaws(InMemoryClaws.make([echo]), paths))
      const requests = yield* openWriter(paths.clawIn)
      const answers = yield* blocksFrom(paths.clawOut)
      const burst = Array.from({ length: 300 }, (_, i) => i % 50 === 0 ? "__list_tools__\n" : `echo\t{"n":${i}}\n`)
      yield* requests.write(burst.join("\n"))
      for (let i = 0; i < burst.length; i++) {
        const answer = yield* Queue.take(answers)
        if (i % 50 === 0) expect(JSON.parse(answer)).toEqual([echo.definition])
        else expect(answer).toBe(`{"n":${i}}`)
      }
    }))

  it("keeps the catalogue's frame only while the tools array is the same one, the bytes encodeClawAnswer gives", () => {
    const frame = catalogFrameMemo()
    const first: Array<ToolDefinition> = [echo.definition]
    expect(frame(first)).toBe(encodeClawAnswer(JSON.stringify(first)))
    // Line breaks, carriage returns and blank lines inside descriptions: still one line of JSON.
    const second: Array<ToolDefinition> = [
      echo.definition,
      { name: "time", description: "Time\r\n\nnow\r \u2028", input_schema: { type: "object" } }
    ]
    expect(frame(second)).toBe(encodeClawAnswer(JSON.stringify(second)))
    expect(frame(second)).toBe(`${JSON.stringify(second)}\n\n`)
    expect(frame([])).toBe(encodeClawAnswer("[]"))
    // Declarations that could not be read follow the tools, for /tools; decodeCatalog reads them back as problems.
    const problems = [{ source: "/claws/a.sh:3", reason: "invalid JSON after #TOOLS:" }]
    const withProblems = frame(first, problems)
    expect(withProblems).toBe(encodeClawAnswer(JSON.stringify([echo.definition, { problem: problems[0] }])))
    const decoded = Result.getOrThrow(decodeCatalog(withProblems.trimEnd()))
    expect(decoded).toEqual({ tools: [echo.definition], problems })
  })
})
