/**
 * Streaming on brain_out is opt-in (docs/pipes.md "Streaming events"): the
 * agent asks with `"stream":true` only a bridge that can stream (one of the
 * run, or an executable that said `{"planckclaw_events":1}`), and reads the
 * event frames before the answer; a bridge that never says so gets the
 * original's requests and is read as before. The bridge's side streams only
 * when asked, and its brain never sees the wire's `stream` field.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Queue, Stream } from "effect"
import * as BrainFifo from "../../src/pipes/FifoBrain.js"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { serveBrain } from "../../src/pipes/Serve.js"
import { answerEvent, type BrainService, type MessagesRequest, type MessagesResponse, textDelta } from "../../src/ports/Brain.js"
import { blocksFrom, eachBrainRequest, spawnScoped, tempDir, writeScript } from "../support/FifoKit.js"

const request = (content: string): MessagesRequest => ({ model: "test-model", max_tokens: 64, messages: [{ role: "user", content }] })

// An executable bridge that streams when asked: its hello first, then for a
// request with "stream":true a ping and two text deltas before the answer,
// whose text says whether the request asked for a stream.
const streamingBridge = `
printf '{"planckclaw_events":1}\\n\\n' > "$PLANCKCLAW_BRAIN_OUT"
${eachBrainRequest(`  case "$payload" in
    *'"stream":true'*)
      { printf '{"stream_event":{"type":"ping"}}\\n\\n'
        printf '{"stream_event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}}\\n\\n'
        printf '{ "stream_event": {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}}\\n\\n'
        printf '{"content":[{"type":"text","text":"Hello (streamed)"}],"stop_reason":"end_turn"}\\n\\n'
      } > "$PLANCKCLAW_BRAIN_OUT" ;;
    *) printf '{"content":[{"type":"text","text":"whole"}],"stop_reason":"end_turn"}\\n\\n' > "$PLANCKCLAW_BRAIN_OUT" ;;
  esac
`)}
`

// The original's kind of bridge: knows nothing of streaming, echoes the request it got.
const plainBridge = `
${eachBrainRequest(`  escaped=$(printf '%s' "$payload" | sed 's/\\\\/\\\\\\\\/g; s/"/\\\\"/g')
  printf '{"content":[{"type":"text","text":"%s"}],"stop_reason":"end_turn"}\\n\\n' "$escaped" > "$PLANCKCLAW_BRAIN_OUT"
`)}
`

const withBridge = (script: string) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const paths = yield* makeRuntimeDir(path.join(dir, "run"))
    const brain = yield* BrainFifo.make({ paths, timeout: "10 seconds", streaming: "announced" })
    const file = yield* writeScript(dir, "brain.sh", script)
    yield* spawnScoped(file, { PLANCKCLAW_BRAIN_IN: paths.brainIn, PLANCKCLAW_BRAIN_OUT: paths.brainOut })
    return brain
  })

const collect = (brain: BrainService, content: string) => Stream.runCollect(brain.stream!(request(content)))

const textOf = (response: MessagesResponse) => response.content.map((block) => ("text" in block ? block.text : "")).join("")

describe("brain_out streaming, agent's side", () => {
  it.effect("an executable that said it streams is asked with stream:true; its text deltas come before the answer", () =>
    Effect.gen(function*() {
      const brain = yield* withBridge(streamingBridge)
      // The hello precedes this first answer on the pipe: once it is read, the bridge is known to stream.
      expect(textOf(yield* brain.complete(request("first")))).toBe("whole")
      const events = yield* collect(brain, "second")
      expect(events).toEqual([
        textDelta("Hel"),
        textDelta("lo"),
        answerEvent({ content: [{ type: "text", text: "Hello (streamed)" }], stop_reason: "end_turn" })
      ])
      // The next whole request is answered as ever: no event frame was left over to be taken for it.
      expect(textOf(yield* brain.complete(request("third")))).toBe("whole")
    }))

  it.effect("a bridge that never says so gets the original's request, and its answer is the one event", () =>
    Effect.gen(function*() {
      const brain = yield* withBridge(plainBridge)
      const events = yield* collect(brain, "hi")
      expect(events).toHaveLength(1)
      const [only] = events
      expect(only?._tag).toBe("Answer")
      const sent = JSON.parse(only?._tag === "Answer" ? textOf(only.response) : "null")
      expect(sent).toEqual(request("hi"))
      expect(sent).not.toHaveProperty("stream")
    }))

  it.effect("without `streaming` the Brain has no stream: a turn asks it whole", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const paths = yield* makeRuntimeDir(path.join(dir, "run"))
      expect((yield* BrainFifo.make({ paths })).stream).toBeUndefined()
    }))
})

describe("brain_out streaming, bridge's side", () => {
  const answer: MessagesResponse = { content: [{ type: "text", text: "Hello" }], stop_reason: "end_turn" }
  const streamingBrain = (seen: Array<unknown>): BrainService => ({
    complete: (received) => Effect.sync(() => void seen.push(received)).pipe(Effect.as(answer)),
    stream: (received) =>
      Stream.fromEffect(Effect.sync(() => void seen.push(received))).pipe(
        Stream.flatMap(() => Stream.make(textDelta("Hel"), textDelta("lo"), answerEvent(answer)))
      )
  })

  it.effect("asked with stream:true it writes the text as event frames, then the answer; asked without, the answer alone", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const paths = yield* makeRuntimeDir(path.join(dir, "run"))
      const seen: Array<unknown> = []
      yield* Effect.forkScoped(serveBrain(streamingBrain(seen), paths))
      const requests = yield* openWriter(paths.brainIn)
      const frames = yield* blocksFrom(paths.brainOut)
      yield* requests.write(`${JSON.stringify({ ...request("a"), stream: true })}\n\n`)
      const streamed = [yield* Queue.take(frames), yield* Queue.take(frames), yield* Queue.take(frames)]
      expect(streamed.map((frame) => JSON.parse(frame))).toEqual([
        { stream_event: { type: "content_block_delta", delta: { type: "text_delta", text: "Hel" } } },
        { stream_event: { type: "content_block_delta", delta: { type: "text_delta", text: "lo" } } },
        answer
      ])
      yield* requests.write(`${JSON.stringify(request("b"))}\n\n`)
      expect(JSON.parse(yield* Queue.take(frames))).toEqual(answer)
      // The wire's field never reaches the brain.
      expect(seen).toEqual([request("a"), request("b")])
    }))
})
