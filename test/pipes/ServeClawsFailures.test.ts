/**
 * The built-in claws bridge answers every request exactly once, in order,
 * whatever goes wrong serving it: a listing that fails, a tool that dies, a
 * request line that is no request. The listing's effect is built once and
 * run for every `__list_tools__`; each run reads the service afresh.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Queue } from "effect"
import { ClawsError, type ClawsService, type ToolDefinition } from "../../src/ports/Claws.js"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { serveClaws } from "../../src/pipes/ServeClaws.js"
import { blocksFrom, tempDir } from "../support/FifoKit.js"

const runtime = Effect.flatMap(tempDir, (dir) => makeRuntimeDir(path.join(dir, "run")))
const tool = (name: string): ToolDefinition => ({ name, description: name, input_schema: { type: "object" } })

/** A service whose listing fails on its second run, and whose `boom` tool dies. */
const flaky = (): ClawsService => {
  let listings = 0
  return {
    list: Effect.die("the plain list is not what a bridge serves"),
    listOnRequest: Effect.suspend(() => {
      listings += 1
      return listings === 2
        ? Effect.fail(new ClawsError({ message: "claws directory gone" }))
        : Effect.succeed({ tools: [tool(`t${listings}`)], problems: [] })
    }),
    call: (name) => name === "boom" ? Effect.die(new Error("kaboom")) : Effect.succeed({ content: `ran ${name}`, isError: false })
  }
}

describe("ServeClaws when serving fails", () => {
  it.effect("answers each failed request with an Error: text and goes on serving, in order", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      yield* Effect.forkScoped(serveClaws(flaky(), paths))
      const requests = yield* openWriter(paths.clawIn)
      const answers = yield* blocksFrom(paths.clawOut)
      yield* requests.write(
        ["__list_tools__", "__list_tools__", "boom\t{}", "no tab here", "ok\t{not json", "ok\t{}", "__list_tools__\r", ""].join("\n")
      )
      expect(JSON.parse(yield* Queue.take(answers))).toEqual([tool("t1")])
      expect(yield* Queue.take(answers)).toBe("Error: claws directory gone")
      expect(yield* Queue.take(answers)).toBe("Error: tool crashed")
      expect(yield* Queue.take(answers)).toMatch(/^Error: claw request is neither __list_tools__ nor name<TAB>input: "no tab here"$/)
      expect(yield* Queue.take(answers)).toMatch(/^Error: input of tool ok is not JSON/)
      expect(yield* Queue.take(answers)).toBe("ran ok")
      // The kept listing effect runs the service again: a new catalogue is served.
      expect(JSON.parse(yield* Queue.take(answers))).toEqual([tool("t3")])
    }))
})
