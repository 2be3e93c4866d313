/**
 * An executable interact bridge sees event lines on interact_out only if it
 * asks (docs/pipes.md "Streaming events"): a run starts it with
 * PLANCKCLAW_EVENTS=1, and one that writes `cli\t\tevents` gets the turn's
 * text and tool lines before each reply. One that does not ask, the
 * original's kind, reads exactly one reply per message, and with
 * PLANCKCLAW_EVENTS=0 an opt-in is ignored (and never answered).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { writeScript } from "../support/FifoKit.js"
import { tempDir } from "../support/Sandbox.js"

// Sends one message (after an opt-in when OPT_IN=1), then logs every line of
// interact_out up to the first reply, and the PLANCKCLAW_EVENTS it was given.
const bridge = `
printf 'events=%s\\n' "\${PLANCKCLAW_EVENTS-unset}" > "$LOG"
[ "$OPT_IN" = 1 ] && printf 'cli\\t\\tevents\\n' > "$PLANCKCLAW_INTERACT_IN"
printf 'cli\\ttime?\\n' > "$PLANCKCLAW_INTERACT_IN"
while IFS= read -r line; do
  printf '%s\\n' "$line" >> "$LOG"
  case "$line" in
    "cli		"*) ;;
    *) break ;;
  esac
done < "$PLANCKCLAW_INTERACT_OUT"
`

const PREAMBLE = "Let me check."
const FINAL = "It is noon."

const runWith = (extra: Record<string, string>) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(AnthropicServer.replies(
      AnthropicServer.toolUse([{ id: "tu_1", name: "get_time", input: {} }], PREAMBLE),
      AnthropicServer.text(FINAL)
    ))
    const cwd = yield* tempDir("planckclaw-events-opt-in-")
    const script = yield* writeScript(cwd, "bridge.sh", bridge)
    const log = path.join(cwd, "bridge.log")
    const result = yield* Cli.run(["run", "--bridge", script], { cwd, env: Cli.runEnv(cwd, server.url, { LOG: log, ...extra }) })
    expect(result.code).toBe(0)
    return { lines: fs.readFileSync(log, "utf8").split("\n").slice(0, -1), server }
  })

describe("an executable interact bridge and the turn's events", () => {
  it.live("one that does not opt in reads the reply alone, as the original's bridges do", () =>
    Effect.gen(function*() {
      const { lines } = yield* runWith({ OPT_IN: "0" })
      expect(lines).toEqual(["events=1", `cli\t${PREAMBLE}\\n\\n${FINAL}`])
    }))

  it.live("one that opts in gets the text and the tool call before the reply", () =>
    Effect.gen(function*() {
      const { lines } = yield* runWith({ OPT_IN: "1" })
      expect(lines[0]).toBe("events=1")
      expect(lines.slice(1, 4)).toEqual([
        `cli\t\ttext\t${PREAMBLE}`,
        "cli\t\ttool\t{\"name\":\"get_time\",\"input\":{}}",
        expect.stringMatching(/^cli\t\tresult\t\{"name":"get_time","ok":true,"ms":\d+\}$/)
      ])
      expect(lines.slice(4)).toEqual([`cli\t\ttext\t${FINAL}`, `cli\t${PREAMBLE}\\n\\n${FINAL}`])
    }))

  it.live("with PLANCKCLAW_EVENTS=0 none is offered: an opt-in is ignored, and not answered as a message", () =>
    Effect.gen(function*() {
      const { lines, server } = yield* runWith({ OPT_IN: "1", PLANCKCLAW_EVENTS: "0" })
      expect(lines).toEqual(["events=0", `cli\t${PREAMBLE}\\n\\n${FINAL}`])
      // One message, one turn: two brain requests (the tool round and the answer), none for the opt-in.
      expect((yield* server.requests).map((request) => AnthropicServer.lastUserText(request.body))).toEqual(["time?", "time?"])
    }))

  // Its first start opts in, reads up to its reply, and fails; the restart asks for nothing and logs the first line it reads.
  const optsInThenNot = `
if [ ! -e "$MARK" ]; then
  : > "$MARK"
  printf 'cli\\t\\tevents\\n' > "$PLANCKCLAW_INTERACT_IN"
  printf 'cli\\tfirst\\n' > "$PLANCKCLAW_INTERACT_IN"
  while IFS= read -r line; do
    case "$line" in
      "cli		"*) ;;
      *) break ;;
    esac
  done < "$PLANCKCLAW_INTERACT_OUT"
  exit 1
fi
printf 'cli\\tsecond\\n' > "$PLANCKCLAW_INTERACT_IN"
IFS= read -r line < "$PLANCKCLAW_INTERACT_OUT"
printf '%s\\n' "$line" > "$LOG"
`

  it.live("a restarted bridge gets events only once it asks anew: the one before may have been another program", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("One."), AnthropicServer.text("Two.")))
      const cwd = yield* tempDir("planckclaw-events-restart-")
      const script = yield* writeScript(cwd, "bridge.sh", optsInThenNot)
      const log = path.join(cwd, "bridge.log")
      const env = Cli.runEnv(cwd, server.url, { LOG: log, MARK: path.join(cwd, "started") })
      const result = yield* Cli.run(["run", "--bridge", script], { cwd, env })
      expect(result.code).toBe(0)
      // The reply itself, not an event line meant for the bridge that asked.
      expect(fs.readFileSync(log, "utf8")).toBe("cli\tTwo.\n")
    }))
})
