import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Fiber, Queue } from "effect"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import * as BrainFifo from "../../src/pipes/FifoBrain.js"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { blocksFrom, eachBrainRequest, spawnScoped, tempDir, writeScript } from "../support/FifoKit.js"
import { advanceTo } from "../support/TestClockWait.js"

// Plays the original bridge_brain.sh: reopens brain_in for every request and
// reads it up to the empty line, then answers by reopening brain_out (with
// the original's `echo "$RESPONSE\n\n"`, which adds a third newline).
const originalBrainBridge = `
n=0
${eachBrainRequest(`  n=$((n + 1))
  case "$payload" in
    *please-timeout*) printf '{"error":"timeout"}\\n\\n' > "$PLANCKCLAW_BRAIN_OUT" ;;
    *please-fail*) printf '{"error":{"type":"overloaded_error"}}\\n\\n' > "$PLANCKCLAW_BRAIN_OUT" ;;
    *please-garbage*) printf 'this is not json\\n\\n' > "$PLANCKCLAW_BRAIN_OUT" ;;
    *)
      text=\${payload#*\\"content\\":\\"}
      text=\${text%%\\"*}
      echo "{\\"id\\":\\"msg_$n\\",\\"type\\":\\"message\\",\\"role\\":\\"assistant\\",\\"content\\":[{\\"type\\":\\"text\\",\\"text\\":\\"echo $text (\${#payload} bytes)\\"}],\\"stop_reason\\":\\"end_turn\\"}\\n\\n" > "$PLANCKCLAW_BRAIN_OUT"
      ;;
  esac
`)}
`

const request = (content: string): MessagesRequest => ({
  model: "test-model",
  max_tokens: 64,
  messages: [{ role: "user", content }]
})

const textOf = (response: { readonly content: ReadonlyArray<{ readonly type: string }> }) =>
  response.content.map((block) => ("text" in block ? block.text : "")).join("")

const withOriginalBridge = Effect.gen(function*() {
  const dir = yield* tempDir
  const paths = yield* makeRuntimeDir(path.join(dir, "run"))
  const brain = yield* BrainFifo.make({ paths, timeout: "10 seconds" })
  const script = yield* writeScript(dir, "bridge_brain.sh", originalBrainBridge)
  yield* spawnScoped(script, { PLANCKCLAW_BRAIN_IN: paths.brainIn, PLANCKCLAW_BRAIN_OUT: paths.brainOut })
  return brain
})

describe("FIFO brain with an original-style bridge", () => {
  it.effect("gets each request's own answer, request after request", () =>
    Effect.gen(function*() {
      const brain = yield* withOriginalBridge
      for (const [index, word] of ["alpha", "beta", "gamma"].entries()) {
        const response = yield* brain.complete(request(word))
        expect(response.id).toBe(`msg_${index + 1}`)
        expect(textOf(response)).toBe(`echo ${word} (${JSON.stringify(request(word)).length} bytes)`)
      }
    }))

  it.effect("serializes concurrent requests so no answer goes to the wrong one", () =>
    Effect.gen(function*() {
      const brain = yield* withOriginalBridge
      const words = ["one", "two", "three", "four", "five", "six"]
      const texts = yield* Effect.forEach(words, (word) => Effect.map(brain.complete(request(word)), textOf), {
        concurrency: "unbounded"
      })
      expect(texts.map((text) => text.split(" ")[1])).toEqual(words)
    }))

  it.effect("carries a request and an answer larger than the pipe buffer", () =>
    Effect.gen(function*() {
      const brain = yield* withOriginalBridge
      const big = "x".repeat(200_000)
      const response = yield* brain.complete(request(big))
      expect(textOf(response)).toBe(`echo ${big} (${JSON.stringify(request(big)).length} bytes)`)
    }))

  it.effect("turns error answers into BrainError, and keeps going", () =>
    Effect.gen(function*() {
      const brain = yield* withOriginalBridge
      const timeout = yield* Effect.flip(brain.complete(request("please-timeout")))
      expect(timeout.reason).toBe("timeout")
      const fatal = yield* Effect.flip(brain.complete(request("please-fail")))
      expect(fatal.reason).toBe("fatal")
      const garbage = yield* Effect.flip(brain.complete(request("please-garbage")))
      expect(garbage.reason).toBe("fatal")
      expect(garbage.detail).toContain("not JSON")
      expect(textOf(yield* brain.complete(request("after")))).toContain("echo after")
    }))
})

describe("FIFO brain timeouts", () => {
  const withTestBridge = Effect.gen(function*() {
    const paths = yield* makeRuntimeDir(path.join(yield* tempDir, "run"))
    const brain = yield* BrainFifo.make({ paths, timeout: "30 seconds" })
    const requests = yield* blocksFrom(paths.brainIn)
    const answers = yield* openWriter(paths.brainOut)
    const answer = (text: string) =>
      answers.write(`${JSON.stringify({ content: [{ type: "text", text }], stop_reason: "end_turn" })}\n\n`)
    return { brain, requests, answer }
  })

  it.effect("times a request out by the clock and drops its late answer instead of giving it to the next request", () =>
    Effect.gen(function*() {
      const { answer, brain, requests } = yield* withTestBridge
      const first = yield* Effect.forkChild(brain.complete(request("first")))
      expect(yield* Queue.take(requests)).toContain("first")
      yield* advanceTo(30_000)
      const error = yield* Effect.flip(Fiber.join(first))
      expect(error.reason).toBe("timeout")

      yield* answer("late answer to first")
      const second = yield* Effect.forkChild(brain.complete(request("second")))
      expect(yield* Queue.take(requests)).toContain("second")
      yield* answer("answer to second")
      expect(textOf(yield* Fiber.join(second))).toBe("answer to second")
    }))

  it.effect("gives up on a late answer that never comes and carries on", () =>
    Effect.gen(function*() {
      const { answer, brain, requests } = yield* withTestBridge
      const first = yield* Effect.forkChild(brain.complete(request("first")))
      expect(yield* Queue.take(requests)).toContain("first")
      yield* advanceTo(30_000)
      expect((yield* Effect.flip(Fiber.join(first))).reason).toBe("timeout")

      const second = yield* Effect.forkChild(brain.complete(request("second")))
      // The second request waits, up to its own 30-second timeout, for the first one's answer before it is sent.
      yield* advanceTo(60_000)
      expect(yield* Queue.take(requests)).toContain("second")
      yield* answer("answer to second")
      expect(textOf(yield* Fiber.join(second))).toBe("answer to second")
    }))
})
