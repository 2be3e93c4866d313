/** What one claw file declares, and what is said about a declaration it cannot take. */
import { describe, expect } from "@effect/vitest"
import { it } from "../support/ProcessServices.js"
import { Effect } from "effect"
import { maxDeclarationBytes, parseClawFile } from "../../src/claws/ClawDeclarations.js"
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
