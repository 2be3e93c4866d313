/**
 * An executable brain bridge that said it streams (its hello) and died: its
 * restart is another process, maybe another program (the file may have
 * changed meanwhile), so it is asked with `"stream":true` only once it says
 * so itself; the request the dead one held goes to it whole. Real bridge
 * processes through ExternalBridge, on real FIFOs; the TestClock moves the
 * restart's backoff.
 */
import { describe, expect } from "@effect/vitest"
import { it } from "../support/ProcessServices.js"
import * as path from "node:path"
import { Effect, Fiber, Schedule, Stream } from "effect"
import * as ExternalBridge from "../../src/pipes/ExternalBridge.js"
import * as BrainFifo from "../../src/pipes/FifoBrain.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import type { BrainEvent, BrainService, MessagesRequest, MessagesResponse } from "../../src/ports/Brain.js"
import { eachBrainRequest, tempDir, writeScript } from "../support/FifoKit.js"
import { advanceTo } from "../support/TestClockWait.js"

const request = (content: string): MessagesRequest => ({ model: "test-model", max_tokens: 64, messages: [{ role: "user", content }] })

// Answers `streamed` to a request that asked for a stream, `whole` to one that did not.
const answer = `  case "$payload" in *'"stream":true'*) text=streamed ;; *) text=whole ;; esac
  printf '{"content":[{"type":"text","text":"%s"}],"stop_reason":"end_turn"}\\n\\n' "$text" > "$PLANCKCLAW_BRAIN_OUT"
`

// First start: the hello, then $ANSWERS requests answered; it exits 1 after the last,
// or, with HOLD=1, once it has read one more. Restarted: the original's kind, no hello.
const streamsThenDies = `if [ ! -e "$DIR/started" ]; then
  : > "$DIR/started"
  printf '{"planckclaw_events":1}\\n\\n' > "$PLANCKCLAW_BRAIN_OUT"
  n=0
  ${eachBrainRequest(`  n=$((n + 1))
  [ "$n" -gt "$ANSWERS" ] && exit 1
${answer}  [ "$n" -eq "$ANSWERS" ] && [ "$HOLD" = 0 ] && exit 1
`)}
fi
${eachBrainRequest(answer)}
`

const withBridge = (options: { readonly answers: number; readonly hold: boolean }) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const paths = yield* makeRuntimeDir(path.join(dir, "run"))
    const bridge = yield* ExternalBridge.make({
      name: "brain",
      command: yield* writeScript(dir, "brain.sh", streamsThenDies),
      paths,
      extraEnv: { DIR: dir, ANSWERS: String(options.answers), HOLD: options.hold ? "1" : "0" },
      restartSchedule: Schedule.exponential("1 second")
    })
    return yield* BrainFifo.make({ paths, timeout: "10 minutes", streaming: "announced", farEndExits: bridge.exits })
  })

const textOf = (response: MessagesResponse) => response.content.map((block) => ("text" in block ? block.text : "")).join("")
const answerText = (events: ReadonlyArray<BrainEvent>) =>
  events.flatMap((event) => event._tag === "Answer" ? [textOf(event.response)] : [])
const streamed = (brain: BrainService, content: string) => Effect.map(Stream.runCollect(brain.stream!(request(content))), answerText)

describe("brain_out streaming, when an executable bridge that streams is restarted", () => {
  it.effect("the restarted one, which never said it streams, is asked whole", () =>
    Effect.gen(function*() {
      const brain = yield* withBridge({ answers: 2, hold: false })
      // The hello comes before this answer: from then on the bridge streams.
      expect(textOf(yield* brain.complete(request("first")))).toBe("whole")
      expect(yield* streamed(brain, "second")).toEqual(["streamed"])
      // It exited after that answer; its restart comes after the backoff.
      yield* advanceTo(1_000)
      expect(yield* streamed(brain, "third")).toEqual(["whole"])
    }))

  it.effect("the request the dead one held goes to the restarted one whole", () =>
    Effect.gen(function*() {
      const brain = yield* withBridge({ answers: 1, hold: true })
      expect(textOf(yield* brain.complete(request("first")))).toBe("whole")
      // Read by the first start, which dies holding it: asked once more, of the restarted one.
      const second = yield* Effect.forkChild(streamed(brain, "second"))
      yield* advanceTo(1_000)
      expect(yield* Fiber.join(second)).toEqual(["whole"])
    }))
})
