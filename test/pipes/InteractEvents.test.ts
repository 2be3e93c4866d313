/**
 * Streaming events on interact_out are opt-in: the agent's end writes them
 * only for a built-in bridge of the run that shows them (its Handover says
 * so), never to an executable or `--bridge none` reader, and no reply can be
 * read as one.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Result } from "effect"
import * as Handover from "../../src/pipes/Handover.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import * as InteractFifo from "../../src/pipes/FifoInteract.js"
import { decodeOutboundLine, encodeEventLine, encodeInteractLine } from "../../src/pipes/InteractLine.js"
import type { InteractEvent } from "../../src/ports/Interact.js"
import { sh, tempDir } from "../support/FifoKit.js"

const events: ReadonlyArray<InteractEvent> = [
  { _tag: "TextDelta", text: "Let me\tcheck\nthe \\ time" },
  { _tag: "ToolCallStart", name: "get_time", input: { zone: "UTC\n" } },
  { _tag: "ToolResult", name: "get_time", ok: false, ms: 12 }
]

describe("interact events on the wire", () => {
  it("an event line decodes to its event, and every reply decodes as a reply", () => {
    for (const event of events) {
      const line = Result.getOrThrow(encodeEventLine("cli", event))
      expect(line.startsWith("cli\t\t")).toBe(true)
      expect(line.slice(0, -1)).not.toMatch(/\n/)
      expect(Result.getOrThrow(decodeOutboundLine(line.slice(0, -1)))).toEqual({ _tag: "Event", channel: "cli", event })
    }
    for (const text of ["\ttext\tx", "", "\t", "tool\t{}", "a\tb"]) {
      const line = Result.getOrThrow(encodeInteractLine({ channel: "cli", text }))
      expect(Result.getOrThrow(decodeOutboundLine(line.slice(0, -1)))).toEqual({ _tag: "Reply", reply: { channel: "cli", text } })
    }
  })

  it("an event of a kind it does not know, or with a bad payload, is skipped, never a reply", () => {
    for (const line of ["cli\t\tlater\tanything", "cli\t\ttool\tnot json", "cli\t\tresult\t{\"name\":\"x\"}", "cli\t\t"]) {
      expect(Result.getOrThrow(decodeOutboundLine(line))._tag).toBe("UnknownEvent")
    }
  })

  it.effect("without a built-in bridge that shows them, the agent's end has no events to send", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const paths = yield* makeRuntimeDir(path.join(dir, "run"))
      const plain = yield* InteractFifo.make({ paths })
      expect(plain.event).toBeUndefined()
      const quiet = yield* InteractFifo.make({ paths, handover: yield* Handover.make({ events: false }) })
      expect(quiet.event).toBeUndefined()
    }))

  it.effect("for a built-in bridge that shows them, events go before the reply, one line each", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const paths = yield* makeRuntimeDir(path.join(dir, "run"))
      const handover = yield* Handover.make({ events: true })
      const interact = yield* InteractFifo.make({ paths, handover })
      for (const event of events) yield* interact.event!("cli", event)
      const seen = yield* sh(`for i in 1 2 3; do IFS= read -r l < "$P"; printf '%s|' "$l"; done`, { P: paths.interactOut })
      expect(seen).toBe(
        "cli\t\ttext\tLet me\\tcheck\\nthe \\\\ time|" +
          "cli\t\ttool\t{\"name\":\"get_time\",\"input\":{\"zone\":\"UTC\\\\n\"}}|" +
          "cli\t\tresult\t{\"name\":\"get_time\",\"ok\":false,\"ms\":12}|"
      )
    }))
})
