/** What one claw file declares, and what is said about a declaration it cannot take. */
import { describe, expect } from "@effect/vitest"
import { it } from "../support/ProcessServices.js"
import { Effect, Result, Schema } from "effect"
import * as McpSchema from "effect/ai/McpSchema"
import { maxDeclarationBytes, parseClawFile } from "../../src/claws/ClawDeclarations.js"
import { ToolDefinition } from "../../src/ports/Claws.js"
import * as Scripts from "../../src/claws/ScriptClaws.js"
import * as Sandbox from "../support/Sandbox.js"
import { settings, writeSettled } from "./ClawKit.js"

const tempDir = Sandbox.tempDir("planckclaw-declarations-")

/** A `#TOOLS:` line of exactly `bytes` bytes declaring `name`, its description padded with `z`. */
const lineOf = (name: string, bytes: number) => {
  const bare = `#TOOLS:{"name":"${name}","description":""}`
  return `#TOOLS:{"name":"${name}","description":"${"z".repeat(bytes - bare.length)}"}`
}

describe("Claw declarations", () => {
  it("skips a #TOOLS: line over the bound, naming its file and line; the bound itself and the other tools stay", () => {
    const parsed = parseClawFile("claws/big.sh", [
      "#!/bin/sh",
      lineOf("at_bound", maxDeclarationBytes),
      lineOf("over", maxDeclarationBytes + 1),
      "#TOOLS:{\"name\":\"small\",\"description\":\"d\"}"
    ].join("\n"))
    expect(parsed.declarations.map((declaration) => [declaration.tool.name, declaration.source])).toEqual([
      ["at_bound", "claws/big.sh:2"],
      ["small", "claws/big.sh:4"]
    ])
    expect(parsed.problems).toEqual([{
      source: "claws/big.sh:3",
      reason: `the #TOOLS: line takes ${maxDeclarationBytes + 1} bytes, more than a declaration may (1048576); skipped`
    }])
  })

  it("skips a declaration whose input_schema MCP and the model APIs refuse, saying what is wrong and where; the others stay", () => {
    const declare = (name: string, schema: string) => `#TOOLS:{"name":"${name}","input_schema":${schema}}`
    const parsed = parseClawFile("claws/weather.sh", [
      "#!/bin/sh",
      declare("required_string", `{"type":"object","properties":{"city":{"type":"string"}},"required":"city"}`),
      declare("property_string", `{"type":"object","properties":{"city":"string"}}`),
      declare("required_number", `{"type":"object","required":["city",2]}`),
      declare("properties_array", `{"type":"object","properties":[]}`),
      declare("array_root", `{"type":"array"}`),
      declare("no_type", `{"properties":{}}`),
      declare("not_object", `"object"`),
      // A key holding a line break is shown escaped: it cannot forge a log line.
      declare("odd_key", `{"type":"object","properties":{"ci\\nty":"string"}}`),
      declare("good", `{"type":"object","properties":{"city":{"type":"string"},"any":true},"required":["city"],"$defs":{}}`)
    ].join("\n"))
    expect(parsed.declarations.map((declaration) => declaration.tool.name)).toEqual(["good"])
    expect(parsed.problems.map(({ reason, source }) => `${source}: ${reason.replace("invalid tool definition: ", "")}`)).toEqual([
      "claws/weather.sh:2: \"required\" must be an array of property names (at input_schema.required)",
      "claws/weather.sh:3: a property's schema must be a JSON object or a boolean (at input_schema.properties.city)",
      "claws/weather.sh:4: \"required\" may hold only property names (strings) (at input_schema.required[1])",
      "claws/weather.sh:5: \"properties\" must be a JSON object of property schemas (at input_schema.properties)",
      "claws/weather.sh:6: input_schema's \"type\" must be \"object\" (at input_schema.type)",
      "claws/weather.sh:7: input_schema needs \"type\": \"object\" (at input_schema.type)",
      "claws/weather.sh:8: input_schema must be a JSON object (a JSON Schema whose \"type\" is \"object\") (at input_schema)",
      "claws/weather.sh:9: a property's schema must be a JSON object or a boolean (at input_schema.properties.\"ci\\nty\")"
    ])
  })

  it("takes exactly the input schemas MCP's Tool takes (effect/ai's McpSchema.ToolJson)", () => {
    const decodeTool = Schema.decodeUnknownResult(ToolDefinition)
    const decodeMcp = Schema.decodeUnknownResult(McpSchema.ToolJson)
    const schemas: ReadonlyArray<unknown> = [
      { type: "object" },
      { type: "object", properties: {} },
      { type: "object", properties: { a: { type: "string" }, b: true, c: false }, required: ["a"] },
      { type: "object", required: [] },
      { type: "object", $defs: { x: {} }, additionalProperties: false },
      { type: "object", properties: { a: "string" } },
      { type: "object", properties: { a: 1 } },
      { type: "object", properties: { a: null } },
      { type: "object", properties: { a: [] } },
      { type: "object", properties: [] },
      { type: "object", properties: null },
      { type: "object", required: "a" },
      { type: "object", required: [1] },
      { type: "object", required: null },
      { type: "array" },
      { properties: {} },
      [],
      null,
      "object"
    ]
    for (const schema of schemas) {
      expect(Result.isSuccess(decodeTool({ name: "t", input_schema: schema })), JSON.stringify(schema))
        .toBe(Result.isSuccess(decodeMcp(schema)))
    }
  })

  it.effect("a claw declaring a 17 MiB description loses that tool only", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeSettled(dir, "ok.sh", "#!/bin/sh\n#TOOLS:{\"name\":\"ok\",\"description\":\"d\"}\necho ok\n")
      yield* writeSettled(dir, "zz_huge.sh", `#!/bin/sh\n${lineOf("huge", 17 * 1024 * 1024)}\n`)
      const claws = yield* Scripts.make(settings(dir))
      const catalog = yield* claws.list
      expect(catalog.tools.map((tool) => tool.name)).toEqual(["ok"])
      expect(catalog.problems.map((problem) => problem.source)).toEqual([`${dir}/zz_huge.sh:2`])
    }))
})
