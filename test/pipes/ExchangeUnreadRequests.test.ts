/**
 * Requests still unread in the pipe when their answers are given up for
 * lost: a `--claw none` run whose bridge process was killed before it read a
 * call, and whose next bridge comes only after both timeouts (the call's,
 * then the next call's wait for the owed answer). The late bridge must not
 * run the given-up call minutes late, nor hand its result to the call now
 * waiting. A real original-style bridge process on real FIFOs; the
 * TestClock moves the timeouts.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Fiber } from "effect"
import * as ClawsFifo from "../../src/pipes/FifoClaws.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { captureLogs } from "../support/LogCapture.js"
import { spawnScoped, tempDir, writeScript } from "../support/FifoKit.js"
import { advanceTo } from "../support/TestClockWait.js"

// The original bridge_claw.sh's loop, with one tool: echo, which also notes each call it ran in $RAN.
const lateBridge = `
while IFS= read -r line; do
  printf '%s\\n' "$line" >> "$RAN"
  printf '%s\\n\\n' "\${line#*\t}" > "$PLANCKCLAW_CLAW_OUT"
done < "$PLANCKCLAW_CLAW_IN"
`

describe("Exchange, requests left unread when their answers are given up for lost", () => {
  it.effect("are dropped from the pipe: a bridge that comes later runs only the call waiting now, and answers it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const paths = yield* makeRuntimeDir(path.join(dir, "run"))
      const logs = yield* captureLogs
      const claws = yield* ClawsFifo.make({ paths, callTimeout: "20 seconds" }).pipe(Effect.provide(logs.layer))
      // No bridge reads: the call stays in the pipe, and times out.
      const first = yield* Effect.forkChild(claws.call("echo", { text: "first" }))
      yield* advanceTo(20_000)
      expect((yield* Fiber.join(first)).content).toContain("did not answer within 20s")
      // The next waits for the answer the first owes, up to its own timeout, then goes out.
      const second = yield* Effect.forkChild(claws.call("echo", { text: "second" }))
      yield* advanceTo(40_000)
      // Given up for lost (and gone out) before the next bridge comes.
      const givenUp = yield* logs.waitFor(/assuming they were dropped/)
      const ran = path.join(dir, "ran")
      const script = yield* writeScript(dir, "bridge_claw.sh", lateBridge)
      yield* spawnScoped(script, { PLANCKCLAW_CLAW_IN: paths.clawIn, PLANCKCLAW_CLAW_OUT: paths.clawOut, RAN: ran })
      expect(yield* Fiber.join(second)).toEqual({ content: "{\"text\":\"second\"}", isError: false })
      expect(fs.readFileSync(ran, "utf8")).toBe("echo\t{\"text\":\"second\"}\n")
      expect(givenUp).toMatch(
        /^WARN no answer on .*claw_out to 1 request\(s\) that timed out; assuming they were dropped; the 22 byte\(s\) of them still unread in .*claw_in are dropped too$/
      )
    }))
})
