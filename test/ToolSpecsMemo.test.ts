/**
 * Prompt.toolSpecsMemo: the tool specs of a turn come from the last
 * catalogue while its tools are the same objects, and are made again,
 * exactly as toolSpecs makes them, as soon as any tool or the cache flag changes.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ToolDefinition } from "../src/Claws.js"
import { toolSpecs, toolSpecsMemo } from "../src/Prompt.js"

const tool = (name: string, description = name): ToolDefinition => ({
  name,
  description,
  input_schema: { type: "object", properties: {} }
})

describe("toolSpecsMemo", () => {
  it("reuses the specs while every tool is the same object, in a new array or not", () => {
    const memo = toolSpecsMemo()
    const b = tool("b")
    const a = tool("a")
    const first = memo([b, a], true)
    expect(first).toEqual(toolSpecs([b, a], true))
    expect(memo([b, a], true)).toBe(first)
  })

  it("makes them again when a tool changed, was added or removed, or the cache flag changed", () => {
    const memo = toolSpecsMemo()
    const a = tool("a")
    const b = tool("b")
    memo([a, b], true)
    const edited = tool("b", "edited")
    expect(memo([a, edited], true)).toEqual(toolSpecs([a, edited], true))
    expect(memo([a, edited, tool("c")], true)).toEqual(toolSpecs([a, edited, tool("c")], true))
    expect(memo([a], true)).toEqual(toolSpecs([a], true))
    expect(memo([a], false)).toEqual(toolSpecs([a], false))
    expect(memo([], false)).toEqual([])
  })
})
