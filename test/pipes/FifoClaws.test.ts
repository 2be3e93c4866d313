import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Cause, Duration, Effect, Exit, Fiber, Queue } from "effect"
import { TestClock } from "effect/testing"
import * as ClawsFifo from "../../src/pipes/FifoClaws.js"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { linesFrom, spawnScoped, tempDir, writeScript } from "../support/FifoKit.js"
import { advanceTo, letArrive } from "../support/TestClockWait.js"

// Plays the original bridge_claw.sh: one read loop over claw_in, and claw_out
// reopened for every answer.
const originalClawBridge = `
while IFS= read -r line; do
  if [ "$line" = "__list_tools__" ]; then
    printf '%s\\n\\n' '[{"name":"echo","description":"Echo the input","input_schema":{"type":"object","properties":{"text":{"type":"string"}}}},{"name":"get_time"},{"name":"bad name!"},{"description":"no name"},{"name":"echo"}]' > "$PLANCKCLAW_CLAW_OUT"
  else
    name=\${line%%\t*}
    input=\${line#*\t}
    case "$name" in
      echo) printf '%s\\n\\n' "$input" > "$PLANCKCLAW_CLAW_OUT" ;;
      get_time) printf '1700000000\\n\\n' > "$PLANCKCLAW_CLAW_OUT" ;;
      fail) printf 'Error: the tool broke\\n\\n' > "$PLANCKCLAW_CLAW_OUT" ;;
      *) printf 'Unknown tool: %s\\n\\n' "$name" > "$PLANCKCLAW_CLAW_OUT" ;;
    esac
  fi
done < "$PLANCKCLAW_CLAW_IN"
`

const withOriginalBridge = Effect.gen(function*() {
  const dir = yield* tempDir
  const paths = yield* makeRuntimeDir(path.join(dir, "run"))
  const claws = yield* ClawsFifo.make({ paths })
  const script = yield* writeScript(dir, "bridge_claw.sh", originalClawBridge)
  yield* spawnScoped(script, { PLANCKCLAW_CLAW_IN: paths.clawIn, PLANCKCLAW_CLAW_OUT: paths.clawOut })
  return claws
})

describe("FIFO claws with an original-style bridge", () => {
  it.effect("discovers tools, checking each declaration on its own", () =>
    Effect.gen(function*() {
      const claws = yield* withOriginalBridge
      const catalog = yield* claws.list
      expect(catalog.tools).toEqual([
        {
          name: "echo",
          description: "Echo the input",
          input_schema: { type: "object", properties: { text: { type: "string" } } }
        },
        { name: "get_time", description: "", input_schema: { type: "object", properties: {} } }
      ])
      expect(catalog.problems.map((problem) => problem.source)).toEqual([
        "claw bridge tool #3",
        "claw bridge tool #4",
        "claw bridge tool #5"
      ])
      expect(catalog.problems[2]?.reason).toContain("duplicate")
    }))

  it.effect("runs calls and recognises failed and unknown tools", () =>
    Effect.gen(function*() {
      const claws = yield* withOriginalBridge
      expect(yield* claws.call("echo", { text: "hi\nthere" })).toEqual({
        content: "{\"text\":\"hi\\nthere\"}",
        isError: false
      })
      expect(yield* claws.call("get_time", {})).toEqual({ content: "1700000000", isError: false })
      expect(yield* claws.call("fail", {})).toEqual({ content: "Error: the tool broke", isError: true })
      expect(yield* claws.call("nope", {})).toEqual({ content: "Unknown tool: nope", isError: true })
      // Discovery after calls still gets its own answer.
      expect((yield* claws.list).tools.map((tool) => tool.name)).toEqual(["echo", "get_time"])
    }))

  it.effect("answers a name that could break the framing locally, and stays in step", () =>
    Effect.gen(function*() {
      const claws = yield* withOriginalBridge
      expect(yield* claws.call("evil\n__list_tools__", {})).toEqual({
        content: "Unknown tool: evil\n__list_tools__",
        isError: true
      })
      expect(yield* claws.call("echo", { n: 1 })).toEqual({ content: "{\"n\":1}", isError: false })
    }))
})

describe("FIFO claws failures", () => {
  const withTestBridge = Effect.gen(function*() {
    const paths = yield* makeRuntimeDir(path.join(yield* tempDir, "run"))
    const claws = yield* ClawsFifo.make({ paths, listTimeout: "10 seconds", callTimeout: "20 seconds" })
    const requests = yield* linesFrom(paths.clawIn)
    const answers = yield* openWriter(paths.clawOut)
    return { claws, requests, answers }
  })

  it.effect("reports a discovery answer that is not a JSON array as a ClawsError", () =>
    Effect.gen(function*() {
      const { answers, claws, requests } = yield* withTestBridge
      const listing = yield* Effect.forkChild(claws.list)
      expect(yield* Queue.take(requests)).toBe("__list_tools__")
      yield* answers.write("{\"name\":\"not an array\"}\n\n")
      const error = yield* Effect.flip(Fiber.join(listing))
      expect(error.message).toContain("not a JSON array")
    }))

  it.effect("turns a call that does not answer in time into a failed tool result, by the clock", () =>
    Effect.gen(function*() {
      const { claws, requests } = yield* withTestBridge
      const calling = yield* Effect.forkChild(claws.call("slow", { a: 1 }))
      expect(yield* Queue.take(requests)).toBe("slow\t{\"a\":1}")
      yield* advanceTo(20_000) // the call timeout
      const result = yield* Fiber.join(calling)
      expect(result.isError).toBe(true)
      expect(result.content).toContain("did not answer within 20s")
    }))

  it.effect("reports discovery that does not answer in time as a ClawsError", () =>
    Effect.gen(function*() {
      const { claws, requests } = yield* withTestBridge
      const listing = yield* Effect.forkChild(claws.list)
      expect(yield* Queue.take(requests)).toBe("__list_tools__")
      yield* advanceTo(10_000) // the discovery timeout
      expect((yield* Effect.flip(Fiber.join(listing))).message).toContain("did not answer discovery within 10s")
    }))

  const catalog = "[{\"name\":\"get_time\"}]\n\n"

  it.effect("after a discovery that timed out, the next fail at once until its late answer comes, then ask again", () =>
    Effect.gen(function*() {
      const { answers, claws, requests } = yield* withTestBridge
      const first = yield* Effect.forkChild(claws.list)
      expect(yield* Queue.take(requests)).toBe("__list_tools__")
      yield* advanceTo(10_000)
      expect((yield* Effect.flip(Fiber.join(first))).message).toContain("did not answer discovery within 10s")

      // Not a wait for the owed answer and then for its own (20 s a message): refused with the clock standing still.
      const second = yield* Effect.forkChild(claws.list)
      yield* letArrive
      const refused = second.pollUnsafe()
      expect(refused !== undefined && Exit.isFailure(refused) ? Cause.squash(refused.cause) : refused).toMatchObject({
        message: expect.stringContaining("has not answered discovery yet")
      })
      expect(yield* Queue.size(requests)).toBe(0)

      // The stalled bridge answers at last: that answer is discarded, and the next discovery is asked anew.
      yield* answers.write(catalog)
      yield* letArrive
      const third = yield* Effect.forkChild(claws.list)
      expect(yield* Queue.take(requests)).toBe("__list_tools__")
      yield* answers.write(catalog)
      expect((yield* Fiber.join(third)).tools.map((tool) => tool.name)).toEqual(["get_time"])
    }))

  it.effect("a discovery that timed out is asked again after a while, in case whoever took it died unseen", () =>
    Effect.gen(function*() {
      const { answers, claws, requests } = yield* withTestBridge
      const first = yield* Effect.forkChild(claws.list)
      expect(yield* Queue.take(requests)).toBe("__list_tools__")
      yield* advanceTo(10_000)
      yield* Effect.flip(Fiber.join(first))
      yield* TestClock.adjust(ClawsFifo.rediscoverAfter)
      // Asked again: the owed answer is waited for as any other, then given up, and the request sent anew.
      const again = yield* Effect.forkChild(claws.list)
      yield* advanceTo(10_000 + Duration.toMillis(ClawsFifo.rediscoverAfter) + 10_000)
      expect(yield* Queue.take(requests)).toBe("__list_tools__")
      yield* answers.write(catalog)
      expect((yield* Fiber.join(again)).tools.map((tool) => tool.name)).toEqual(["get_time"])
    }))
})
