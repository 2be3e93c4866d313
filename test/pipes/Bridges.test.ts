/**
 * End to end through the six FIFOs: the built command as a child process,
 * real named pipes, and real `/bin/sh` bridges written by the tests the way
 * users write them (open and close a pipe per message, `read` and `printf`).
 * Each test has its own sandbox (memory, runtime and claws directories) and
 * its own loopback Anthropic server, and leaves no process or file behind.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ONLY_CONTROLS } from "../../src/agent/Agent.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import { REPO } from "../support/Cli.js"
import {
  allExited,
  fifoNames,
  fifosLeft,
  fifosReady,
  listening,
  planckclaw,
  planckclawToEnd,
  receiveRaw,
  runDirLeft,
  sendRaw,
  shOk
} from "../support/Pipes.js"
import { isRunning, pidIn, type Sandbox, sandbox, within } from "../support/Sandbox.js"
import * as ScheduleTool from "../../src/schedule/ScheduleTool.js"

/** Real processes start slowly on a loaded machine; every wait inside is bounded well below this. */
const timeout = 60_000
const apiKey = "test-key-not-secret"

const lastContent = (body: AnthropicServer.MessagesBody): unknown => body.messages[body.messages.length - 1]?.content
const toolResultsOf = (body: AnthropicServer.MessagesBody) =>
  lastContent(body) as ReadonlyArray<{ type: string; tool_use_id: string; content: string; is_error?: boolean }>

/** Answers every request with `re: ` and the last user text. */
const echo: AnthropicServer.Handler = (request) =>
  AnthropicServer.text(`re: ${AnthropicServer.lastUserText(request.body)}`)

/** The first `count` requests the server received, waiting for them within the default bound. */
const requestsTo = (server: AnthropicServer.AnthropicServer, count: number) =>
  within(`${count} request(s) at the Anthropic server`)(server.awaitRequests(count))

/** A sandbox whose built-in brain is a fresh loopback server. */
const withServer = (handler: AnthropicServer.Handler, settings: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(handler)
    const box = yield* sandbox({ ANTHROPIC_API_KEY: apiKey, ANTHROPIC_BASE_URL: server.url, ...settings })
    return { server, box }
  })

/** `planckclaw run --bridge none ...`, once its agent reads interact_in. */
const runWithoutBridge = (box: Sandbox, extra: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const run = yield* planckclaw(box, ["run", "--bridge", "none", ...extra])
    yield* listening(box.runDir)
    return run
  })

/** A bridge that only stays up, with a helper process of its own, both recording their pids. */
const stayingUp = (box: Sandbox, name: string) =>
  box.script(
    `${name}.sh`,
    String.raw`echo $$ > "$D/${name}.pid"
sleep 600 &
echo $! > "$D/${name}-helper.pid"
wait
`
  )

/** Reads one brain request the way the original bridge does: reopen brain_in, read lines up to the empty one. */
const readBrainRequest = String.raw`request=
  while IFS= read -r line; do
    [ -z "$line" ] && break
    request=$line
  done < "$PLANCKCLAW_BRAIN_IN"
  [ -n "$request" ] || exit 1`

const lookupTool =
  `[{"name":"lookup","description":"Looks a word up","input_schema":{"type":"object","properties":{"word":{"type":"string"}}}}]`

/**
 * A brain script that answers `re: ` and the last "content" string of the
 * request (the newest user message), and exits 1 once, before or after its
 * first answer; each start is noted in brain.starts.
 */
const dyingBrain = (box: Sandbox, when: "before its first answer" | "after its first answer") => {
  const die = `if [ ! -e "$D/brain.died" ]; then : > "$D/brain.died"; exit 1; fi`
  return box.script(
    "brain.sh",
    String.raw`echo $$ >> "$D/brain.starts"
while :; do
  ${readBrainRequest}
  ${when === "before its first answer" ? die : ""}
  said=$(printf '%s' "$request" | sed 's/.*"content":"\([^"]*\)".*/\1/')
  printf '{"type":"message","role":"assistant","content":[{"type":"text","text":"re: %s"}],"stop_reason":"end_turn"}\n\n' "$said" > "$PLANCKCLAW_BRAIN_OUT"
  ${when === "after its first answer" ? die : ""}
done
`
  )
}

/**
 * A claw bridge script serving `lookup` (it answers `found` and the call's
 * input), that exits 1 once: after its first answer, or during its first
 * call; each start is noted in claw.starts.
 */
const dyingClaws = (box: Sandbox, when: "after its first answer" | "during its first call") => {
  const die = `if [ ! -e "$D/claw.died" ]; then : > "$D/claw.died"; exit 1; fi`
  return box.script(
    "claws.sh",
    String.raw`echo $$ >> "$D/claw.starts"
while IFS= read -r line < "$PLANCKCLAW_CLAW_IN"; do
  if [ "$line" = __list_tools__ ]; then
    answer='${lookupTool}'
  else
    ${when === "during its first call" ? die : ""}
    answer="found $(printf '%s' "$line" | cut -f2-)"
  fi
  printf '%s\n\n' "$answer" > "$PLANCKCLAW_CLAW_OUT"
  ${when === "after its first answer" ? die : ""}
done
`
  )
}

/** The model calls `lookup` with the user's word, then says what the tool said. */
const lookupOnce: AnthropicServer.Handler = (request, index) => {
  const last = lastContent(request.body)
  return Array.isArray(last)
    ? AnthropicServer.text(`tool said: ${toolResultsOf(request.body)[0]?.content}`)
    : AnthropicServer.toolUse([{ id: `tu_${index}`, name: "lookup", input: { word: last } }])
}

describe("planckclaw run: the runtime directory", () => {
  for (const { preexisting, signal } of [
    { signal: "SIGTERM", preexisting: false },
    { signal: "SIGINT", preexisting: true }
  ] as const) {
    it.live(
      `lays a 0700 directory with six 0600 FIFOs and on ${signal} removes them and stops every bridge process` +
        (preexisting ? " (directory made beforehand, kept empty)" : " (directory it made, removed)"),
      () =>
        Effect.gen(function*() {
          const box = yield* sandbox()
          if (preexisting) {
            // Private already: an existing directory is used as it is, never chmod-ed.
            fs.mkdirSync(box.runDir, { mode: 0o700 })
          }
          const run = yield* planckclaw(box, [
            "run",
            "--bridge",
            "none",
            "--brain",
            stayingUp(box, "brain"),
            "--claw",
            stayingUp(box, "claw")
          ])
          yield* fifosReady(box.runDir)
          const pidFiles = ["brain.pid", "brain-helper.pid", "claw.pid", "claw-helper.pid"]
          const pids = yield* Effect.forEach(pidFiles, (name) => pidIn(box.path(name)))
          expect(pids.map(isRunning)).toEqual([true, true, true, true])

          const dir = fs.lstatSync(box.runDir)
          expect(dir.isDirectory()).toBe(true)
          expect((dir.mode & 0o777).toString(8)).toBe("700")
          for (const name of fifoNames) {
            const fifo = fs.lstatSync(path.join(box.runDir, name))
            expect(fifo.isFIFO(), name).toBe(true)
            expect((fifo.mode & 0o777).toString(8), name).toBe("600")
          }

          yield* run.signal(signal)
          const result = yield* run.ended
          expect(result.code).toBe(0)
          expect(fifosLeft(box.runDir)).toEqual([])
          expect(runDirLeft(box.runDir)).toEqual(preexisting ? [] : undefined)
          yield* allExited(box, pidFiles)
        }),
      timeout
    )
  }

  it.live("refuses a runtime directory that is a symbolic link, touching nothing behind it", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const target = box.path("elsewhere")
      fs.mkdirSync(target)
      fs.symlinkSync(target, box.runDir)
      const result = yield* planckclawToEnd(box, ["run", "--bridge", "none", "--brain", "none", "--claw", "none"])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(`runtime directory ${box.runDir} is a symbolic link; refusing to use it`)
      expect(fs.lstatSync(box.runDir).isSymbolicLink()).toBe(true)
      expect(fs.readdirSync(target)).toEqual([])
    }), timeout)

  it.live("refuses a runtime directory in use by a live run, which goes on answering", () =>
    Effect.gen(function*() {
      const { box } = yield* withServer(echo)
      const first = yield* runWithoutBridge(box)
      const second = yield* planckclawToEnd(box, ["run", "--bridge", "none"], {
        env: { ...box.env, PLANCKCLAW_DIR: box.path("other-memory") }
      })
      expect(second.code).toBe(1)
      expect(second.stderr).toContain(`runtime directory ${box.runDir} is in use by a live run (pid ${first.pid})`)
      expect(fifosLeft(box.runDir)).toEqual([...fifoNames])
      yield* sendRaw(box.runDir, "cli\tstill there?\n")
      expect(yield* receiveRaw(box.runDir, 1)).toEqual(["cli\tre: still there?"])
    }), timeout)

  it.live("starts over the leftovers of a killed run", () =>
    Effect.gen(function*() {
      const { box } = yield* withServer(echo)
      const killed = yield* runWithoutBridge(box)
      yield* killed.signal("SIGKILL")
      expect((yield* killed.ended).code).toBeNull()
      // What a SIGKILL leaves: every FIFO and the pid file of a dead process.
      expect(fifosLeft(box.runDir)).toEqual([...fifoNames])
      expect(box.read("run/planckclaw.pid")?.trim()).toBe(String(killed.pid))

      const next = yield* runWithoutBridge(box)
      expect(box.read("run/planckclaw.pid")?.trim()).toBe(String(next.pid))
      yield* sendRaw(box.runDir, "cli\thello again\n")
      expect(yield* receiveRaw(box.runDir, 1)).toEqual(["cli\tre: hello again"])
      yield* next.signal("SIGTERM")
      const result = yield* next.ended
      expect(result.code).toBe(0)
      expect(result.stderr).toContain(`removing stale run state in ${box.runDir} left by pid ${killed.pid}`)
      expect(fifosLeft(box.runDir)).toEqual([])
      expect(runDirLeft(box.runDir) ?? []).toEqual([])
    }), timeout)
})

describe("planckclaw run: the patience of the agent on the pipes", () => {
  // The agent's wait on brain_out is derived from the brain's own settings,
  // read where the brain declares them: seconds, so a fraction is a value.
  it.live("PLANCKCLAW_BRAIN_TIMEOUT=2.5 and PLANCKCLAW_CLAW_TIMEOUT=1.5 start a run that answers and exits 0", () =>
    Effect.gen(function*() {
      const { box, server } = yield* withServer(echo, { PLANCKCLAW_BRAIN_TIMEOUT: "2.5", PLANCKCLAW_CLAW_TIMEOUT: "1.5" })
      const result = yield* planckclawToEnd(box, ["run"], { input: "hello\n" })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toBe("re: hello\n")
      expect((yield* server.requests).map((request) => lastContent(request.body))).toEqual(["hello"])
    }), timeout)
})

describe("--bridge none: anyone can talk through the pipes", () => {
  it.live("answers printf > interact_in on interact_out, unescaping what the brain sees and escaping replies", () =>
    Effect.gen(function*() {
      const { box, server } = yield* withServer(echo)
      yield* runWithoutBridge(box)

      // Exactly what a user types.
      yield* shOk("printf to interact_in", String.raw`printf 'cli\tHello\n' > "$RUN/interact_in"`, { RUN: box.runDir })
      const [hello] = yield* receiveRaw(box.runDir, 1)
      expect(hello).toBe("cli\tre: Hello")

      // On the wire: `\n`, `\t` and `\\` escapes, plus `\q`, which is no escape and stays as it is.
      yield* sendRaw(box.runDir, String.raw`room-7	line one\nline two\tcol\\end \q` + "\n")
      const [reply] = yield* receiveRaw(box.runDir, 1)
      const requests = yield* requestsTo(server, 2)
      expect(lastContent(requests[1]!.body)).toBe("line one\nline two\tcol\\end \\q")
      expect(reply).toBe(String.raw`room-7	re: line one\nline two\tcol\\end \\q`)
    }), timeout)

  it.live("frames lines whatever the writes: two in one write, one split over writes, and skips a line with no tab", () =>
    Effect.gen(function*() {
      const { box, server } = yield* withServer(echo)
      const run = yield* runWithoutBridge(box)

      yield* sendRaw(box.runDir, "cli\tone\ncli\ttwo\n")
      expect(yield* receiveRaw(box.runDir, 2)).toEqual(["cli\tre: one", "cli\tre: two"])

      // One open file description, two writes with a pause between: the line arrives in pieces.
      yield* shOk(
        "a line split over two writes",
        String.raw`{ printf 'cli\tHel'; sleep 0.2; printf 'lo\n'; } > "$RUN/interact_in"`,
        { RUN: box.runDir }
      )
      expect(yield* receiveRaw(box.runDir, 1)).toEqual(["cli\tre: Hello"])

      yield* sendRaw(box.runDir, "no tab here\n")
      yield* sendRaw(box.runDir, "cli\tafter\n")
      expect(yield* receiveRaw(box.runDir, 1)).toEqual(["cli\tre: after"])
      expect(yield* run.alive).toBe(true)
      const requests = yield* server.requests
      expect(requests.map((request) => lastContent(request.body))).toEqual(["one", "two", "Hello", "after"])

      yield* run.signal("SIGTERM")
      const result = yield* run.ended
      expect(result.code).toBe(0)
      expect(result.stderr).toContain("ignored a line on interact_in: interact line has no tab")
    }), timeout)
})

describe("external bridges (--bridge/--brain/--claw PATH)", () => {
  it.live("an interact bridge script trades two messages for two replies, exits 0, and the run ends cleanly", () =>
    Effect.gen(function*() {
      const { box } = yield* withServer(echo)
      const bridge = box.script(
        "my_bridge.sh",
        String.raw`echo $$ > "$D/bridge.pid"
printf 'cli\tfirst\n' > "$PLANCKCLAW_INTERACT_IN"
printf 'cli\tsecond\n' > "$PLANCKCLAW_INTERACT_IN"
{ IFS= read -r one; IFS= read -r two; } < "$PLANCKCLAW_INTERACT_OUT"
printf '%s\n%s\n' "$one" "$two" > "$D/replies.txt"
exit 0
`
      )
      // A claw bridge that stays up: the end of the run must stop it too.
      const claws = box.script(
        "claws.sh",
        String.raw`echo $$ > "$D/claw.pid"
sleep 600 &
echo $! > "$D/claw-helper.pid"
while IFS= read -r line < "$PLANCKCLAW_CLAW_IN"; do
  printf '[]\n\n' > "$PLANCKCLAW_CLAW_OUT"
done
`
      )
      const result = yield* planckclawToEnd(box, ["run", "--bridge", bridge, "--claw", claws])
      expect(result.code).toBe(0)
      expect(box.read("replies.txt")).toBe("cli\tre: first\ncli\tre: second\n")
      expect(fifosLeft(box.runDir)).toEqual([])
      expect(runDirLeft(box.runDir)).toBeUndefined()
      yield* allExited(box, ["bridge.pid", "claw.pid", "claw-helper.pid"])
    }), timeout)

  it.live("a brain script in the original style runs a tool round; only it gets the API key", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ ANTHROPIC_API_KEY: apiKey })
      const brain = box.script(
        "brain.sh",
        String.raw`env > "$D/brain.env"
n=0
while :; do
  ${readBrainRequest}
  n=$((n + 1))
  printf '%s\n' "$request" > "$D/request-$n.json"
  if [ "$n" -eq 1 ]; then
    printf '%s\n\n' '{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"tu_time","name":"get_time","input":{}}],"stop_reason":"tool_use"}' > "$PLANCKCLAW_BRAIN_OUT"
  else
    printf '%s\n\n' '{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"It is noon, says the clock."}],"stop_reason":"end_turn"}' > "$PLANCKCLAW_BRAIN_OUT"
  fi
done
`
      )
      box.script(
        "claws/time.sh",
        String.raw`#TOOLS:{"name":"get_time","description":"The current time","input_schema":{"type":"object","properties":{}}}
env > "$D/claw-script.env"
printf 'The clock says 12:00.'
`
      )
      yield* runWithoutBridge(box, ["--brain", brain])
      yield* sendRaw(box.runDir, "cli\twhat time is it?\n")
      expect(yield* receiveRaw(box.runDir, 1)).toEqual(["cli\tLet me look.\\n\\nIt is noon, says the clock."])

      const first = JSON.parse(box.read("request-1.json") ?? "null") as AnthropicServer.MessagesBody
      expect(first.tools?.map((tool) => tool.name)).toEqual(["get_time", ScheduleTool.ADD, ScheduleTool.LIST, ScheduleTool.REMOVE])
      expect(first.messages).toEqual([{ role: "user", content: "what time is it?" }])
      const second = JSON.parse(box.read("request-2.json") ?? "null") as AnthropicServer.MessagesBody
      expect(second.messages[1]).toEqual({
        role: "assistant",
        content: [{ type: "text", text: "Let me look." }, { type: "tool_use", id: "tu_time", name: "get_time", input: {} }]
      })
      expect(toolResultsOf(second)).toEqual([
        { type: "tool_result", tool_use_id: "tu_time", content: "The clock says 12:00." }
      ])

      expect(box.read("brain.env")?.split("\n")).toContain(`ANTHROPIC_API_KEY=${apiKey}`)
      expect(box.read("claw-script.env")).toBeDefined()
      expect(box.read("claw-script.env")).not.toContain(apiKey)
      expect(box.read("claw-script.env")).not.toContain("ANTHROPIC_API_KEY")
    }), timeout)

  it.live("what a brain or claw bridge prints on its stdout goes to stderr: stdout carries only replies", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ ANTHROPIC_API_KEY: apiKey })
      const brain = box.script(
        "brain.sh",
        String.raw`echo "brain bridge starting"
while :; do
  ${readBrainRequest}
  echo "brain bridge got a request"
  printf '%s\n\n' '{"type":"message","role":"assistant","content":[{"type":"text","text":"hi there"}],"stop_reason":"end_turn"}' > "$PLANCKCLAW_BRAIN_OUT"
done
`
      )
      const claw = box.script(
        "claw.sh",
        String.raw`echo "claw bridge starting"
while IFS= read -r line < "$PLANCKCLAW_CLAW_IN"; do
  printf '[]\n\n' > "$PLANCKCLAW_CLAW_OUT"
done
`
      )
      const result = yield* planckclawToEnd(box, ["run", "--brain", brain, "--claw", claw], { input: "hello\n" })
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("hi there\n")
      expect(result.stderr).toContain("brain bridge starting")
      expect(result.stderr).toContain("brain bridge got a request")
      expect(result.stderr).toContain("claw bridge starting")
    }), timeout)

  it.live("a claw bridge script serves discovery and calls to the built-in brain, without the API key", () =>
    Effect.gen(function*() {
      const { box, server } = yield* withServer(AnthropicServer.replies(
        AnthropicServer.toolUse([{ id: "tu_1", name: "lookup", input: { word: "fifo" } }]),
        AnthropicServer.text("A fifo is a named pipe.")
      ))
      const claws = box.script(
        "claws.sh",
        String.raw`env > "$D/claw.env"
while IFS= read -r line < "$PLANCKCLAW_CLAW_IN"; do
  if [ "$line" = __list_tools__ ]; then
    printf '%s\n\n' '${lookupTool}' > "$PLANCKCLAW_CLAW_OUT"
  else
    name=$(printf '%s' "$line" | cut -f1)
    input=$(printf '%s' "$line" | cut -f2-)
    printf '%s called with %s\nand a second line\n\n' "$name" "$input" > "$PLANCKCLAW_CLAW_OUT"
  fi
done
`
      )
      yield* runWithoutBridge(box, ["--claw", claws])
      yield* sendRaw(box.runDir, "cli\twhat is a fifo?\n")
      expect(yield* receiveRaw(box.runDir, 1)).toEqual(["cli\tLet me check.\\n\\nA fifo is a named pipe."])
      const requests = yield* requestsTo(server, 2)
      expect(requests[0]!.body.tools?.map((tool) => tool.name)).toEqual(["lookup", ScheduleTool.ADD, ScheduleTool.LIST, ScheduleTool.REMOVE])
      expect(toolResultsOf(requests[1]!.body)).toEqual([
        { type: "tool_result", tool_use_id: "tu_1", content: "lookup called with {\"word\":\"fifo\"}\nand a second line" }
      ])
      expect(box.read("claw.env")).toBeDefined()
      expect(box.read("claw.env")).not.toContain(apiKey)
      expect(box.read("claw.env")).not.toContain("ANTHROPIC_API_KEY")
    }), timeout)
})

/** The "Write your own bridge" example of docs/pipes.md, read from the page so the two never drift. */
const readmeBridge = (() => {
  const page = fs.readFileSync(new URL("../../docs/pipes.md", import.meta.url), "utf8")
  const section = page.slice(page.indexOf("\n## Write your own bridge\n"))
  const match = /```sh\n([\s\S]*?)```/.exec(section)
  if (match === null) throw new Error("docs/pipes.md has no shell block under '## Write your own bridge'")
  return match[1]!
})()

describe("the shell bridge of docs/pipes.md", () => {
  it.live("works as written: piped lines in, replies out (multi-line and backslashes intact), exit 0", () =>
    Effect.gen(function*() {
      const { box, server } = yield* withServer((request) => {
        const said = String(lastContent(request.body))
        return AnthropicServer.text(said === "bye" ? "Goodbye!\nSee you." : `re: ${said}`)
      })
      fs.writeFileSync(box.path("my_bridge.sh"), readmeBridge, { mode: 0o755 })
      const result = yield* planckclawToEnd(box, ["run", "--bridge", "./my_bridge.sh"], {
        // A line of control characters alone passes the bridge's blank test: the agent answers it.
        input: "hello\nC:\\temp\\new is a path\n\n   \n\u0001\nbye\n"
      })
      expect(result.stdout).toBe(`re: hello\nre: C:\\temp\\new is a path\n${ONLY_CONTROLS}\nGoodbye!\nSee you.\n`)
      expect(result.code).toBe(0)
      expect((yield* server.requests).map((request) => lastContent(request.body))).toEqual([
        "hello",
        "C:\\temp\\new is a path",
        "bye"
      ])
    }), timeout)
})

describe("a bridge that dies mid-conversation is restarted, and no reply is lost or shifted", () => {
  it.live("a brain script that exits 1 after its first answer", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ ANTHROPIC_API_KEY: apiKey })
      const brain = dyingBrain(box, "after its first answer")
      const run = yield* runWithoutBridge(box, ["--brain", brain])
      yield* sendRaw(box.runDir, "cli\tm1\ncli\tm2\ncli\tm3\n")
      expect(yield* receiveRaw(box.runDir, 3)).toEqual(["cli\tre: m1", "cli\tre: m2", "cli\tre: m3"])
      expect(box.read("brain.starts")?.trim().split("\n")).toHaveLength(2)
      yield* run.signal("SIGTERM")
      expect((yield* run.ended).stderr).toContain("bridge brain exited with code 1; restarting after backoff")
    }), timeout)

  it.live("a claw bridge script that exits 1 after its first answer", () =>
    Effect.gen(function*() {
      const { box, server } = yield* withServer(lookupOnce)
      const claws = dyingClaws(box, "after its first answer")
      yield* runWithoutBridge(box, ["--claw", claws])
      yield* sendRaw(box.runDir, "cli\talpha\ncli\tbeta\n")
      expect(yield* receiveRaw(box.runDir, 2)).toEqual([
        "cli\tLet me check.\\n\\ntool said: found {\"word\":\"alpha\"}",
        "cli\tLet me check.\\n\\ntool said: found {\"word\":\"beta\"}"
      ])
      const requests = yield* requestsTo(server, 4)
      // Both turns discovered the tool: the first from the bridge before it died, the second after its restart.
      expect(requests[0]!.body.tools?.map((tool) => tool.name)).toEqual(["lookup", ScheduleTool.ADD, ScheduleTool.LIST, ScheduleTool.REMOVE])
      expect(requests[2]!.body.tools?.map((tool) => tool.name)).toEqual(["lookup", ScheduleTool.ADD, ScheduleTool.LIST, ScheduleTool.REMOVE])
      expect(box.read("claw.starts")?.trim().split("\n")).toHaveLength(2)
    }), timeout)
})

describe("a bridge that dies holding a request: the request is not left to the pipe's timeout", () => {
  it.live("a brain script that dies after reading its first request: the request goes again to the restarted one", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ ANTHROPIC_API_KEY: apiKey })
      const brain = dyingBrain(box, "before its first answer")
      const run = yield* runWithoutBridge(box, ["--brain", brain])
      yield* sendRaw(box.runDir, "cli\tm1\ncli\tm2\n")
      // Before, m1 waited out the pipe's patience (minutes) for an answer the dead bridge owed.
      expect(yield* receiveRaw(box.runDir, 2)).toEqual(["cli\tre: m1", "cli\tre: m2"])
      expect(box.read("brain.starts")?.trim().split("\n")).toHaveLength(2)
      yield* run.signal("SIGTERM")
      expect((yield* run.ended).stderr).toMatch(/the bridge on \S*brain_out exited owing 1 answer\(s\)/)
    }), timeout)

  it.live("a claw bridge that dies during a tool call: the call fails at once, and the next uses the restarted one", () =>
    Effect.gen(function*() {
      const { box, server } = yield* withServer(lookupOnce)
      const claws = dyingClaws(box, "during its first call")
      yield* runWithoutBridge(box, ["--claw", claws])
      yield* sendRaw(box.runDir, "cli\talpha\n")
      expect(yield* receiveRaw(box.runDir, 1)).toEqual([
        "cli\tLet me check.\\n\\ntool said: Error: the claw bridge exited before tool lookup answered; it is being restarted"
      ])
      yield* sendRaw(box.runDir, "cli\tbeta\n")
      expect(yield* receiveRaw(box.runDir, 1)).toEqual(["cli\tLet me check.\\n\\ntool said: found {\"word\":\"beta\"}"])
      const requests = yield* requestsTo(server, 4)
      expect(toolResultsOf(requests[1]!.body)[0]?.is_error).toBe(true)
      expect(box.read("claw.starts")?.trim().split("\n")).toHaveLength(2)
    }), timeout)
})

describe("planckclaw bridge NAME: built-in bridges as processes of their own", () => {
  it.live("the anthropic and scripts bridges serve a tool round; the cli bridge prints replies and exits 0 at end of input", () =>
    Effect.gen(function*() {
      const { box, server } = yield* withServer((request, index) => {
        const last = lastContent(request.body)
        if (Array.isArray(last)) return AnthropicServer.text("Checked the clock.")
        return String(last).includes("time")
          ? AnthropicServer.toolUse([{ id: `tu_${index}`, name: "get_time", input: {} }])
          : AnthropicServer.text(`re: ${String(last)}`)
      }, { CLAWS_DIR: path.join(REPO, "claws") })
      yield* planckclaw(box, ["run", "--bridge", "none", "--brain", "none", "--claw", "none"])
      yield* fifosReady(box.runDir)
      yield* planckclaw(box, ["bridge", "anthropic"])
      yield* planckclaw(box, ["bridge", "scripts"])
      yield* listening(box.runDir)

      yield* sendRaw(box.runDir, "cli\twhat time is it?\n")
      expect(yield* receiveRaw(box.runDir, 1)).toEqual(["cli\tLet me check.\\n\\nChecked the clock."])
      const requests = yield* requestsTo(server, 2)
      expect(requests[0]!.body.tools?.map((tool) => tool.name).sort()).toEqual(["get_time", "roll_dice", "system_status", ScheduleTool.ADD, ScheduleTool.LIST, ScheduleTool.REMOVE].sort())
      const [result] = toolResultsOf(requests[1]!.body)
      expect(result?.tool_use_id).toBe("tu_0")
      expect(result?.content).toMatch(/^Unix timestamp: \d+\nISO-8601 UTC: /)
      expect(result?.is_error).toBeUndefined()

      // The terminal bridge as the fourth process: piped input, replies on stdout, exit 0 at end of input.
      const cli = yield* planckclawToEnd(box, ["bridge", "cli"], { input: "hello\nand goodbye\n" })
      expect(cli.stdout).toBe("re: hello\nre: and goodbye\n")
      expect(cli.code).toBe(0)
      expect((yield* server.requests).map((request) => lastContent(request.body)).slice(2)).toEqual([
        "hello",
        "and goodbye"
      ])
    }), timeout)

  it.live("a `planckclaw bridge` process does not outlive the run it serves", () =>
    Effect.gen(function*() {
      const { box } = yield* withServer(echo)
      const run = yield* planckclaw(box, ["run", "--bridge", "none", "--brain", "none"])
      yield* fifosReady(box.runDir)
      const brain = yield* planckclaw(box, ["bridge", "anthropic"])
      yield* listening(box.runDir)
      // A round trip: the bridge process is serving this run's brain pipes.
      yield* sendRaw(box.runDir, "cli\tare you there?\n")
      expect(yield* receiveRaw(box.runDir, 1)).toEqual(["cli\tre: are you there?"])

      yield* run.signal("SIGTERM")
      expect((yield* run.ended).code).toBe(0)
      expect(runDirLeft(box.runDir)).toBeUndefined()
      // The pipes it holds are gone with the run: nothing can reach it any more, and a
      // restarted run makes new pipes it would never see. It must end and say so.
      const bridge = yield* brain.ended
      expect(bridge.code).not.toBeNull()
      expect(bridge.stderr).not.toBe("")
    }), timeout)
})
