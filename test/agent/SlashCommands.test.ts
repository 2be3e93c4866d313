import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { text } from "../../src/brain/ScriptedBrain.js"
import * as Commands from "../../src/agent/SlashCommands.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { diceTool, harness, line, timeTool } from "../support/Harness.js"
import { tempDir } from "../support/Sandbox.js"

const archives = (directory: string) =>
  fs.existsSync(path.join(directory, "archive")) ? fs.readdirSync(path.join(directory, "archive")).sort() : []

describe("Commands.parse", () => {
  it("knows the commands, whole text only, and leaves paths alone", () => {
    expect(Commands.parse("/help")).toEqual(Option.some(Commands.Command.Help()))
    expect(Commands.parse("  /TOOLS \n")).toEqual(Option.some(Commands.Command.Tools()))
    expect(Commands.parse("/forget confirm")).toEqual(Option.some(Commands.Command.Forget({ confirm: true })))
    expect(Commands.parse("/forget")).toEqual(Option.some(Commands.Command.Forget({ confirm: false })))
    expect(Commands.parse("/frobnicate now")).toEqual(Option.some(Commands.Command.Unknown({ command: "/frobnicate now" })))
    expect(Commands.parse("/x")).toEqual(Option.some(Commands.Command.Unknown({ command: "/x" })))
    expect(Commands.parse("/etc/hosts")).toEqual(Option.none())
    expect(Commands.parse("/etc/hosts is broken")).toEqual(Option.none())
    expect(Commands.parse("what does /help do?")).toEqual(Option.none())
    expect(Commands.parse("/")).toEqual(Option.none())
    expect(Commands.parse("/1st")).toEqual(Option.none())
  })
})

describe("Commands through the agent", () => {
  it.effect("/help, /tools, an unknown command and /quit are answered without the model and leave no history", () =>
    Effect.gen(function*() {
      const h = yield* harness({ script: [text("a real answer")], tools: [timeTool, diceTool] })
      expect((yield* h.say("/help")).text).toBe(Commands.HELP)
      expect((yield* h.say("/tools")).text).toBe("2 tools:\nget_time — Current time\nroll_dice — Roll dice")
      expect((yield* h.say("/frobnicate")).text).toBe("unknown command /frobnicate — /help lists the commands")
      expect((yield* h.say("/quit")).text).toContain("/quit ends a terminal session")
      expect(yield* h.requests).toHaveLength(0)
      expect(h.read("history.jsonl")).toBeUndefined()
      // A path is a question for the model.
      expect((yield* h.say("/etc/hosts")).text).toBe("a real answer")
      expect(yield* h.requests).toHaveLength(1)
      expect(h.read("history.jsonl")).toBe(line("user", "/etc/hosts") + line("assistant", "a real answer"))
    }))

  it.effect("/usage says there is no ledger before any answer, then sums it", () =>
    Effect.gen(function*() {
      const h = yield* harness({ script: [text("hi")] })
      expect((yield* h.say("/usage")).text).toBe("No usage ledger yet: nothing has been counted.")
      yield* h.say("hello")
      const usage = (yield* h.say("/usage")).text
      expect(usage).toContain("test-model")
      expect(usage).toContain("Total: 1 request,")
      expect(yield* h.requests).toHaveLength(1)
    }))

  it.effect("/compact folds old history now with the agent's compactor and says what it did", () =>
    Effect.gen(function*() {
      const history = Array.from({ length: 3 }, (_, i) => line("user", `u${i}`) + line("assistant", `a${i}`)).join("")
      const h = yield* harness({ history, settings: { HISTORY_KEEP: "2" }, script: [text("They talked.")] })
      expect((yield* h.say("/compact")).text).toBe(
        "Compacted: summarised 4 lines into the summary (13 bytes, 1 request); kept 2 lines in history."
      )
      expect(h.read("summary.md")).toBe("They talked.\n")
      expect(h.read("history.jsonl")).toBe(line("user", "u2") + line("assistant", "a2"))
      expect((yield* h.say("/compact")).text).toBe(
        "Nothing to compact: history holds no lines older than the last HISTORY_KEEP."
      )
    }))

  it.effect("/forget asks first; /forget confirm archives history, summary and ledger, and the next request has no old memory", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        summary: "The user is Marc.\n",
        script: [text("first answer"), text("fresh answer")],
        settings: { PLANCKCLAW_PROMPT_CACHE: "0" }
      })
      yield* h.say("remember me")
      const before = h.read("history.jsonl")
      expect(before).toBe(line("user", "remember me") + line("assistant", "first answer"))

      const asked = (yield* h.say("/forget")).text
      expect(asked).toContain("2 history lines")
      expect(asked).toContain("Send /forget confirm")
      expect(h.read("history.jsonl")).toBe(before)

      const done = (yield* h.say("/forget confirm")).text
      expect(done).toMatch(/^Forgotten: summary\.md and history\.jsonl moved to archive\/\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\/ in the memory directory\. The next message starts afresh\.$/)
      const [stamp] = archives(h.directory)
      const archived = path.join(h.directory, "archive", stamp!)
      expect(fs.readFileSync(path.join(archived, "history.jsonl"), "utf8")).toBe(before)
      expect(fs.readFileSync(path.join(archived, "summary.md"), "utf8")).toBe("The user is Marc.\n")
      expect(h.read("history.jsonl")).toBeUndefined()
      expect(h.read("summary.md")).toBeUndefined()
      expect(h.read(".compaction-commit")).toBeUndefined()

      yield* h.say("who am I?")
      const requests = yield* h.requests
      expect(requests[1]!.system).toBe("You are a helpful personal assistant.")
      expect(requests[1]!.messages).toEqual([{ role: "user", content: "who am I?" }])
      // The held descriptor was dropped: the new exchange is in a new file, the archive is untouched.
      expect(h.read("history.jsonl")).toBe(line("user", "who am I?") + line("assistant", "fresh answer"))
      expect(fs.readFileSync(path.join(archived, "history.jsonl"), "utf8")).toBe(before)

      expect((yield* h.say("/forget")).text).toContain("2 history lines")
      expect((yield* h.say("/forget confirm")).text).toContain("Forgotten: history.jsonl moved")
      expect(archives(h.directory)).toHaveLength(2)
      expect((yield* h.say("/forget confirm")).text).toBe("There was nothing to forget: history and summary were empty.")
    }))

  it.effect("with the prompt cache on, the window starts afresh after a forget", () =>
    Effect.gen(function*() {
      const h = yield* harness({ script: [text("one"), text("two"), text("three")] })
      yield* h.say("a")
      yield* h.say("b")
      yield* h.say("/forget confirm")
      yield* h.say("c")
      const requests = yield* h.requests
      expect(requests[2]!.messages.map((message) => message.role)).toEqual(["user"])
      expect(JSON.stringify(requests[2]!.messages)).not.toContain("\"a\"")
    }))

  it.effect("a forget that cannot make its archive changes nothing and says so", () =>
    Effect.gen(function*() {
      const h = yield* harness({ history: line("user", "old") + line("assistant", "kept"),
        script: [text("still here")],
        settings: { PLANCKCLAW_PROMPT_CACHE: "0" }
      })
      // A file where the archive directory must go: mkdir fails, as on a full or broken disk.
      yield* h.write("archive", "not a directory")
      expect((yield* h.say("/forget confirm")).text).toMatch(/^Could not forget: .*archive/)
      expect(h.read("history.jsonl")).toBe(line("user", "old") + line("assistant", "kept"))
      yield* h.say("still?")
      const [request] = yield* h.requests
      expect(request!.messages[0]).toEqual({ role: "user", content: "old" })
    }))
})

const cliSetup = Effect.gen(function*() {
  const server = yield* AnthropicServer.make(AnthropicServer.echo)
  const cwd = yield* tempDir("planckclaw-commands-")
  const env = Cli.runEnv(cwd, server.url)
  return { server, cwd, env }
})

describe("Commands through the built command over the pipes", () => {
  it.live("printf '/help\\n/tools\\n…' | planckclaw run: each answered, none sent to the model", () =>
    Effect.gen(function*() {
      const t = yield* cliSetup
      const input = ["/help", "/tools", "/usage", "/compact", "/forget", "/nope", "/etc/hosts"].map((line) => `${line}\n`).join("")
      const result = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input })
      expect(result.code).toBe(0)
      expect(result.stderr).toBe("")
      const out = result.stdout
      expect(out).toContain(`${Commands.helpText(["/quit            leave (or Ctrl-D)"])}\n`)
      // The shipped claws' three, and the schedule tools every run offers.
      expect(out).toContain("6 tools:\n")
      expect(out).toMatch(/\nget_time — Get the current time/)
      expect(out).toContain("No usage ledger yet: nothing has been counted.\n")
      expect(out).toContain("Nothing to compact: history holds no lines older than the last HISTORY_KEEP.\n")
      expect(out).toContain("There is nothing to forget: history and summary are empty.\n")
      expect(out).toContain("unknown command /nope — /help lists the commands\n")
      expect(out.endsWith("re: /etc/hosts\n")).toBe(true)
      const turns = yield* t.server.turns
      expect(turns.map((request) => AnthropicServer.lastUserText(request.body))).toEqual(["/etc/hosts"])
    }), 60_000)

  it.live("/tools in a run names the declarations the built-in claws bridge could not read", () =>
    Effect.gen(function*() {
      const t = yield* cliSetup
      const claws = path.join(t.cwd, "claws")
      fs.mkdirSync(claws)
      fs.writeFileSync(
        path.join(claws, "mixed.sh"),
        '#!/bin/sh\n#TOOLS:{"name":"good_one","description":"Works"}\n#TOOLS:{not json\necho hi\n',
        { mode: 0o755 }
      )
      const result = yield* Cli.run(["run"], { cwd: t.cwd, env: { ...t.env, CLAWS_DIR: claws }, input: "/tools\n" })
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("4 tools:\ngood_one — Works\n")
      expect(result.stdout).toContain("1 declaration could not be read:\n")
      expect(result.stdout).toContain(`${path.join(claws, "mixed.sh")}:3: invalid JSON after #TOOLS:`)
    }), 60_000)

  it.live("/forget confirm between two runs' messages: the next request has no old history; /quit ends a piped run", () =>
    Effect.gen(function*() {
      const t = yield* cliSetup
      const first = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input: "remember this\n/usage\n" })
      expect(first.stdout).toContain("Total: 1 request,")
      const second = yield* Cli.run(["run"], {
        cwd: t.cwd,
        env: t.env,
        input: "/forget\n/forget confirm\nfresh start\n/quit\nnever sent\n"
      })
      expect(second.code).toBe(0)
      expect(second.stdout).toContain("This archives our conversation (2 history lines")
      expect(second.stdout).toMatch(/Forgotten: history\.jsonl moved to archive\/[0-9T-]+Z\/ in the memory directory\. The next message starts afresh\.\n/)
      expect(second.stdout.endsWith("re: fresh start\n")).toBe(true)
      const turns = yield* t.server.turns
      expect(turns.map((request) => request.body.messages.length)).toEqual([1, 1])
      expect(turns.map((request) => AnthropicServer.lastUserText(request.body))).toEqual(["remember this", "fresh start"])
      const archive = path.join(t.cwd, "memory", "archive")
      const [stamp] = fs.readdirSync(archive)
      expect(fs.readFileSync(path.join(archive, stamp!, "history.jsonl"), "utf8")).toBe(
        line("user", "remember this") + line("assistant", "re: remember this")
      )
      expect(fs.readFileSync(path.join(t.cwd, "memory", "history.jsonl"), "utf8")).toBe(
        line("user", "fresh start") + line("assistant", "re: fresh start")
      )
    }), 60_000)
})
