/**
 * Ctrl-C in a real pseudo-terminal, against a loopback brain that holds a
 * request until its connection closes: mid-turn it cancels the turn (the
 * brain's connection is closed, a claw running is killed, nothing stored,
 * the journal left with nothing to answer, a restart answers nothing) and
 * the prompt comes back for the next message; on a half-typed line it
 * clears the line; twice on an empty prompt it leaves, exit 0, the line
 * ended and the cursor shown.
 */
import * as fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as CtrlC from "../../src/interact/CtrlC.js"
import * as Terminal from "../../src/interact/TerminalInteract.js"
import { CANCELLED } from "../../src/ports/Interact.js"
import * as Inbox from "../../src/memory/Inbox.js"
import * as Cli from "../support/Cli.js"
import { session } from "../support/PtySession.js"
import { eventually, tempDir } from "../support/Sandbox.js"

const CTRL_C = "\u0003"
const CTRL_D = "\u0004"

interface Seen {
  readonly texts: Array<string>
  /** Requests whose connection closed before they were answered. */
  closedUnanswered: number
}

const lastUserText = (body: { messages?: ReadonlyArray<{ role: string; content: unknown }> }) =>
  [...(body.messages ?? [])].reverse().find((m) => m.role === "user" && typeof m.content === "string")?.content as string ?? ""

const answer = (res: Http.ServerResponse, content: ReadonlyArray<unknown>, stop: string) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify({
    id: "msg_test", type: "message", role: "assistant", model: "claude-test", content,
    stop_reason: stop, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 }
  }))
}

/** `hold` is never answered; `use the tool` calls the `sleepy` claw; anything else is echoed. */
const brainServer = Effect.acquireRelease(
  Effect.callback<{ server: Http.Server; url: string; seen: Seen }>((resume) => {
    const seen: Seen = { texts: [], closedUnanswered: 0 }
    const server = Http.createServer((req, res) => {
      let raw = ""
      req.on("data", (chunk: Buffer) => void (raw += chunk.toString("utf8")))
      req.on("end", () => {
        const text = lastUserText(JSON.parse(raw))
        seen.texts.push(text)
        res.on("close", () => {
          if (!res.writableEnded) seen.closedUnanswered++
        })
        if (text === "hold") return
        if (text === "use the tool") return answer(res, [{ type: "tool_use", id: "t1", name: "sleepy", input: {} }], "tool_use")
        answer(res, [{ type: "text", text: `re: ${text}` }], "end_turn")
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen })))
  }),
  ({ server }) => Effect.callback<void>((resume) => {
    server.closeAllConnections()
    server.close(() => resume(Effect.void))
  })
)

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("Ctrl-C in a pseudo-terminal", () => {
  it.live("cancels a turn and a claw, clears a line, leaves at the second press, and a restart answers nothing", () =>
    Effect.gen(function*() {
      const brain = yield* brainServer
      const cwd = yield* tempDir("planckclaw-ctrlc-")
      const claws = path.join(cwd, "claws")
      const pidFile = path.join(cwd, "sleepy.pid")
      fs.mkdirSync(claws)
      fs.writeFileSync(
        path.join(claws, "sleepy.sh"),
        "#!/bin/sh\n#TOOLS:{\"name\":\"sleepy\",\"description\":\"sleeps\",\"input_schema\":{\"type\":\"object\",\"properties\":{}}}\n" +
          `echo $$ > '${pidFile}'\nexec sleep 300\n`,
        { mode: 0o755 }
      )
      const memory = path.join(cwd, "memory")
      const env = Cli.baseEnv({
        ANTHROPIC_API_KEY: "test-key-not-secret",
        ANTHROPIC_BASE_URL: brain.url,
        PLANCKCLAW_DIR: memory,
        CLAWS_DIR: claws,
        PLANCKCLAW_BRAIN_RETRIES: "0",
        PLANCKCLAW_RUN_DIR: path.join(cwd, "run"),
        SHELL: "/bin/sh",
        TERM: "xterm",
        COLUMNS: "200",
        LINES: "50"
      })
      const s = yield* session({ cwd, env })
      yield* s.until(Terminal.PROMPT)

      // Mid-turn: the brain's request is given up, its connection closed.
      yield* s.type("hold\r")
      yield* eventually("the brain to hold the request", () => brain.seen.texts.includes("hold") || undefined)
      yield* s.type(CTRL_C)
      yield* s.until(CANCELLED)
      yield* eventually("the held request's connection to close", () => brain.seen.closedUnanswered === 1 || undefined)
      yield* s.until(Terminal.PROMPT)
      yield* s.type("next one\r")
      yield* s.until("re: next one")

      // A claw running when Ctrl-C comes is killed.
      yield* s.type("use the tool\r")
      const pid = yield* eventually("the claw to start", () =>
        fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim() !== "" ? Number(fs.readFileSync(pidFile, "utf8")) : undefined)
      expect(alive(pid)).toBe(true)
      yield* s.type(CTRL_C)
      yield* s.until(CANCELLED)
      yield* eventually("the claw's process to be gone", () => !alive(pid) || undefined)
      yield* s.until(Terminal.PROMPT)

      // A half-typed line is cleared: only what is typed after reaches the brain.
      yield* s.type("half typed")
      yield* s.type(CTRL_C)
      yield* s.type("after clear\r")
      yield* s.until("re: after clear")
      yield* s.until(Terminal.PROMPT)

      // Twice on an empty prompt: the first says how, the second leaves.
      yield* s.type(CTRL_C)
      yield* s.until(CtrlC.LEAVE_HINT)
      yield* s.type(CTRL_C)
      expect(yield* s.exit).toBe(0)
      // The shell's prompt starts on a line of its own, the cursor shown.
      expect(s.raw().endsWith(`${CtrlC.ECHO}\r\n${Terminal.SHOW_CURSOR}`)).toBe(true)

      // The answers given up are skipped in silence: no warning on the user's screen.
      expect(s.screen()).not.toContain("discarded")
      expect(brain.seen.texts).toEqual(["hold", "next one", "use the tool", "after clear"])
      const history = fs.readFileSync(path.join(memory, "history.jsonl"), "utf8")
      expect(history).toContain("next one")
      expect(history).toContain("after clear")
      expect(history).not.toContain("hold")
      expect(history).not.toContain("use the tool")
      expect(Inbox.replay(fs.readFileSync(path.join(memory, ".inbox.jsonl"), "utf8"))).toEqual([])

      // A restart answers nothing left over; Ctrl-D leaves.
      const again = yield* session({ cwd, env })
      yield* again.until(Terminal.PROMPT)
      yield* again.type(CTRL_D)
      expect(yield* again.exit).toBe(0)
      expect(again.screen()).not.toContain("left unanswered")
      expect(brain.seen.texts).toHaveLength(4)
      expect(again.raw().endsWith(`\r\n${Terminal.SHOW_CURSOR}`)).toBe(true)
    }), 90_000)
})
