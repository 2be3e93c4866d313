/**
 * A claw's file name is shown with its control characters escaped wherever
 * it is logged or printed: a name holding a newline cannot forge a line of
 * the log, of `planckclaw tools` or of `planckclaw doctor`.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect } from "@effect/vitest"
import { it, runInHelper } from "../support/ProcessServices.js"
import { ConfigProvider, Effect } from "effect"
import * as Scripts from "../../src/claws/ScriptClaws.js"
import * as ClawsCheck from "../../src/cli/commands/doctor/ClawsCheck.js"
import { printable } from "../../src/runtime/Printable.js"
import * as Cli from "../support/Cli.js"
import { captureLogs } from "../support/LogCapture.js"
import * as Sandbox from "../support/Sandbox.js"
import { settings } from "./ClawKit.js"

const forged = "x\nplanckclaw error: FAKE MESSAGE\ny.sh"
const shown = "x\\nplanckclaw error: FAKE MESSAGE\\ny.sh"

/** A claw named `forged` with a malformed declaration (the reviewer's repro), in a sandbox. */
const withForgedClaw = Effect.gen(function*() {
  const box = yield* Sandbox.sandbox()
  Fs.writeFileSync(Path.join(box.claws, forged), "#TOOLS:{bad\n", { mode: 0o644 })
  return box
})

const forgedLines = (text: string) => text.split("\n").filter((line) => line.startsWith("planckclaw error: FAKE"))

describe("printable", () => {
  it("escapes control characters as JSON does, C1, DEL, U+2028 and the backslash too; leaves the rest", () => {
    expect(printable(forged)).toBe(shown)
    expect(printable("a\tb\rc\u001b[2Jd\u007fe\u009bf\u2028g\\h")).toBe("a\\tb\\rc\\u001b[2Jd\\u007fe\\u009bf\\u2028g\\\\h")
    expect(printable("claws/dé jà ✓.sh")).toBe("claws/dé jà ✓.sh")
  })
})

describe("a claw named with a newline", () => {
  it.effect("its problem is logged on one line, the name escaped", () =>
    Effect.gen(function*() {
      const box = yield* withForgedClaw
      const logs = yield* captureLogs
      yield* Effect.flatMap(Scripts.make(settings(box.claws)), (claws) => claws.list).pipe(Effect.provide(logs.layer))
      expect(logs.lines).toHaveLength(1)
      expect(logs.lines[0]).toMatch(new RegExp(`^WARN claw problem at ${box.claws}/x\\\\nplanckclaw error: FAKE MESSAGE\\\\ny\\.sh:1: `))
      expect(logs.lines[0]).not.toContain("\n")
    }))

  it.live("planckclaw tools prints it escaped, forging no line", () =>
    Effect.gen(function*() {
      const box = yield* withForgedClaw
      const result = yield* Cli.run(["tools"], { cwd: box.dir, env: box.env })
      expect(result.code).toBe(0)
      expect(result.stdout).toContain(`  ${box.claws}/${shown}:1: invalid JSON after #TOOLS:`)
      expect(forgedLines(result.stdout)).toEqual([])
    }))

  it.effect("planckclaw doctor's claw lines show it escaped, with its problem", () =>
    Effect.gen(function*() {
      const box = yield* withForgedClaw
      const findings = yield* ClawsCheck.check.pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["CLAWS_DIR", box.claws]])), { preserveEmptyStrings: true }))
      )
      const claw = findings.filter((finding) => finding.subject.startsWith("claw x"))
      expect(claw.map((finding) => [finding.subject, finding.status])).toEqual([[`claw ${shown}`, "fail"]])
      expect(claw[0]?.detail).toMatch(new RegExp(`^${box.claws}/x\\\\nplanckclaw error: FAKE MESSAGE\\\\ny\\.sh:1: invalid JSON`))
    }))

  it.effect("a claw that cannot be started is named escaped in the error (logged by the caller)", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-names-")
      const error = yield* runInHelper({
        command: Path.join(dir, forged),
        args: [],
        cwd: dir,
        env: { PATH: "/usr/bin:/bin" },
        stdoutMax: 1024,
        stderrMax: 1024,
        floodAllowance: 0
      }).pipe(Effect.flip)
      expect(error.message).toContain(`cannot start ${dir}/${shown}: ENOENT`)
      expect(error.message).not.toContain("\n")
    }))
})
