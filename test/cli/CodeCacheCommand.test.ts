/**
 * The command a start's code cache is kept under: a plain `run` line also
 * names the bridges it starts, since each compiles functions of its own (a
 * cache made by a run with no bridges would leave the terminal's, the
 * brain's and the claws' to be compiled again at every start of the usual run).
 */
import { createRequire } from "node:module"
import { describe, expect, it } from "vitest"

const { cacheCommand } = createRequire(import.meta.url)("../../bin/code-cache.cjs") as {
  readonly cacheCommand: (args: ReadonlyArray<string>) => string | undefined
}

describe("the code cache's command", () => {
  it("names a plain run's bridge, brain and claws, one letter each, in any order of the flags", () => {
    expect(cacheCommand(["run"])).toBe("run-c-s")
    expect(cacheCommand(["run", "--debug"])).toBe("run-c-s")
    expect(cacheCommand(["run", "--bridge", "none", "--brain", "none", "--claw", "none"])).toBe("run-nnn")
    expect(cacheCommand(["run", "--claw", "none", "--bridge", "none"])).toBe("run-n-n")
    expect(cacheCommand(["run", "--bridge", "discord", "--brain", "openai"])).toBe("run-dos")
    expect(cacheCommand(["run", "--bridge", "./my-bridge", "--claw", "/opt/claws"])).toBe("run-x-x")
  })

  it("is plain `run` for any other run line, and the command itself otherwise", () => {
    expect(cacheCommand(["run", "--bogus"])).toBe("run")
    expect(cacheCommand(["run", "--bridge=none"])).toBe("run")
    expect(cacheCommand(["run", "--bridge", "none", "--bridge", "cli"])).toBe("run")
    expect(cacheCommand(["run", "--bridge"])).toBe("run")
    expect(cacheCommand(["tools"])).toBe("tools")
    expect(cacheCommand([])).toBeUndefined()
  })
})
