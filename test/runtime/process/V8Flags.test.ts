/**
 * The built command's run tunes V8 once its agent has started, and says so
 * at debug level: pretenuring off (Pretenuring.ts) by default and the
 * quicker warm-up (EarlyTierUp.ts) when opted in, both through
 * V8Flags.setV8Flags, whose node:v8 must load inside the bundle (a
 * vm.Script, where it must not be a dynamic import). The settings choose.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Cli from "../../support/Cli.js"
import { sandbox } from "../../support/Sandbox.js"

const pretenuringOff = "V8's allocation-site pretenuring turned off"
const tierUpSooner = "V8 optimises hot code sooner"

describe("V8Flags", () => {
  it.live("the built run sets its V8 flags once started, as the settings choose", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      // No input: the run starts, its agent is ready, the input ends, the run ends.
      const shipped = yield* Cli.run(["run", "--brain", "none", "--debug"], { cwd: box.dir, env: box.env, input: "" })
      expect(shipped.code, shipped.stderr).toBe(0)
      expect(shipped.stderr).toContain(pretenuringOff)
      expect(shipped.stderr).not.toContain(tierUpSooner)
      const tuned = yield* Cli.run(["run", "--brain", "none", "--debug"], {
        cwd: box.dir,
        env: box.envWith({ PLANCKCLAW_V8_EARLY_TIER_UP: "1" }),
        input: ""
      })
      expect(tuned.code, tuned.stderr).toBe(0)
      expect(tuned.stderr).toContain(pretenuringOff)
      expect(tuned.stderr).toContain(tierUpSooner)
      const defaults = yield* Cli.run(["run", "--brain", "none", "--debug"], {
        cwd: box.dir,
        env: box.envWith({ PLANCKCLAW_V8_PRETENURING: "1", PLANCKCLAW_V8_EARLY_TIER_UP: "0" }),
        input: ""
      })
      expect(defaults.code, defaults.stderr).toBe(0)
      expect(defaults.stderr).not.toContain(pretenuringOff)
      expect(defaults.stderr).not.toContain(tierUpSooner)
      // Each setting alone governs its own flag.
      const onlyTierUpKept = yield* Cli.run(["run", "--brain", "none", "--debug"], {
        cwd: box.dir,
        env: box.envWith({ PLANCKCLAW_V8_EARLY_TIER_UP: "0" }),
        input: ""
      })
      expect(onlyTierUpKept.code, onlyTierUpKept.stderr).toBe(0)
      expect(onlyTierUpKept.stderr).toContain(pretenuringOff)
      expect(onlyTierUpKept.stderr).not.toContain(tierUpSooner)
    }), 60_000)
})
