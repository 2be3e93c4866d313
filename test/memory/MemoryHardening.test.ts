/**
 * Memory against a hostile or unlucky directory: exchanges known by their
 * journal key rather than their text, memory files that are links, devices
 * or someone else's, and history lines of many megabytes.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it, vi } from "@effect/vitest"
import { Effect, Option } from "effect"
import { text } from "../../src/brain/ScriptedBrain.js"
import * as Inbox from "../../src/memory/Inbox.js"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { capText, HISTORY_LINE_MAX_BYTES, promptMemo } from "../../src/agent/Prompt.js"
import { harness, line, memoryStore } from "../support/Harness.js"
import { tempDir } from "../support/Sandbox.js"

const journal = (...records: ReadonlyArray<object>) => records.map((record) => `${JSON.stringify(record)}\n`).join("")

/** A memory store with `read`: a file's contents (a missing file throws). */
const setup = (files: Record<string, string> = {}) =>
  Effect.map(memoryStore(files), (store) => ({
    ...store,
    read: (name: string) => fs.readFileSync(path.join(store.directory, name), "utf8")
  }))

const exchange = (question: string, answer: string) =>
  [{ role: "user" as const, content: question }, { role: "assistant" as const, content: answer }]

describe("an exchange is known by its journal key, not its text", () => {
  it.effect("after a crash, an exchange identical to the last one in history is still stored", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        history: line("user", "ping") + line("assistant", "pong"),
        // Decided before the crash, not stored yet: same question, same answer as the last exchange.
        inbox: journal(
          { accepted: 1, key: "a-different-exchange", channel: "c", text: "ping" },
          { answered: 1, reply: "pong", stored: true }
        ),
        script: []
      })
      expect(yield* h.reply).toMatchObject({ channel: "c", text: "pong" })
      yield* h.finish
      expect(h.read("history.jsonl")).toBe((line("user", "ping") + line("assistant", "pong")).repeat(2))
      expect(h.read(".inbox.jsonl")).toBe("")
    }))

  it.effect("the same key is stored once, another key with the same text again", () =>
    Effect.gen(function*() {
      const { memory, read } = yield* setup()
      yield* memory.append(exchange("hi", "hello"), { exchange: "k1" })
      // A replay of k1 (the crash came after the append, before the journal noted it).
      yield* memory.append(exchange("hi", "hello"), { exchange: "k1" })
      yield* memory.append(exchange("hi", "hello"), { exchange: "k2" })
      expect(read("history.jsonl")).toBe((line("user", "hi") + line("assistant", "hello")).repeat(2))
    }))

  it.effect("a key whose append never happened (crash after the ledger was written) is appended", () =>
    Effect.gen(function*() {
      const { directory, memory, read } = yield* setup()
      yield* memory.append(exchange("hi", "hello"), { exchange: "k1" })
      // The ledger names k2's range first; the crash comes before history gets it.
      // As the agent names a range ahead: one record line appended to the ledger.
      const ledgerFile = path.join(directory, ".history-ledger.json")
      const { ino: inode, size } = fs.statSync(path.join(directory, "history.jsonl"))
      const bytes = Buffer.byteLength(line("user", "hi") + line("assistant", "hello"))
      expect(read(".history-ledger.json")).toContain(`"key":"k1"`)
      fs.appendFileSync(ledgerFile, `${JSON.stringify({ inode, key: "k2", start: size, end: size + bytes })}\n`)
      yield* memory.append(exchange("hi", "hello"), { exchange: "k2" })
      yield* memory.append(exchange("hi", "hello"), { exchange: "k2" })
      expect(read("history.jsonl")).toBe((line("user", "hi") + line("assistant", "hello")).repeat(2))
    }))

  it.effect("a new ledger starts as its first record; a crash that tore it leaves the exchange appended once", () =>
    Effect.gen(function*() {
      const first = yield* setup()
      yield* first.memory.append(exchange("hi", "hello"), { exchange: "k1" })
      const { ino: inode } = fs.statSync(path.join(first.directory, "history.jsonl"))
      const bytes = Buffer.byteLength(line("user", "hi") + line("assistant", "hello"))
      // Appended, not written whole through a temporary file: the record line alone.
      expect(first.read(".history-ledger.json")).toBe(`${JSON.stringify({ inode, key: "k1", start: 0, end: bytes })}\n`)
      expect(fs.readdirSync(first.directory).filter((name) => name.endsWith(".tmp"))).toEqual([])
      // A crash in the middle of that first write: the torn line names nothing.
      const torn = yield* setup({ ".history-ledger.json": `{"inode":${inode},"key":"k1","sta` })
      yield* torn.memory.append(exchange("hi", "hello"), { exchange: "k1" })
      yield* torn.memory.append(exchange("hi", "hello"), { exchange: "k1" })
      expect(torn.read("history.jsonl")).toBe(line("user", "hi") + line("assistant", "hello"))
    }))

  it.effect("a compaction moves the ledger with the lines it keeps: a replay after it stores nothing twice", () =>
    Effect.gen(function*() {
      const { memory, folds, read } = yield* setup({ "history.jsonl": line("user", "old") + line("assistant", "older") })
      yield* memory.append(exchange("kept", "tail"), { exchange: "kept-key" })
      const plan = yield* folds.planFold(2)
      yield* folds.commitFold(Option.getOrThrow(plan), "summary")
      expect(read("history.jsonl")).toBe(line("user", "kept") + line("assistant", "tail"))
      yield* memory.append(exchange("kept", "tail"), { exchange: "kept-key" })
      expect(read("history.jsonl")).toBe(line("user", "kept") + line("assistant", "tail"))
      // Folded away entirely: still known as stored.
      const all = yield* folds.planFold(0)
      yield* folds.commitFold(Option.getOrThrow(all), "summary 2")
      yield* memory.append(exchange("kept", "tail"), { exchange: "kept-key" })
      expect(read("history.jsonl")).toBe("")
    }))

  it.effect("keys are unique across runs, though ids start over when the journal empties", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const first = yield* Inbox.make(directory)
      const one = yield* first.accept({ channel: "c", text: "x" })
      yield* first.delivered(one)
      const second = yield* Inbox.make(directory)
      const two = yield* second.accept({ channel: "c", text: "x" })
      expect(two.id).toBe(one.id)
      expect(two.key).toBeDefined()
      expect(two.key).not.toBe(one.key)
    }))
})

describe("memory files must be regular files of this user", () => {
  const bait = (directory: string) => {
    const target = path.join(directory, "bashrc")
    fs.writeFileSync(target, "# login script\n")
    return target
  }

  it.effect("a history.jsonl that is a symlink is refused, naming it, and never written through", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const target = bait(directory)
      const history = path.join(directory, "history.jsonl")
      fs.symlinkSync(target, history)
      const refused = yield* Effect.flip(Memory.ensureWritable(directory))
      expect(refused.message).toBe(`${history} is a symbolic link; refusing to follow it (make it a regular file)`)
      // Planted under a running agent: each use refuses too.
      const memory = yield* Memory.make(directory)
      const appended = yield* Effect.flip(memory.append(exchange("evil", "echo pwned")))
      expect(appended.message).toContain(`${history} is a symbolic link`)
      const read = yield* Effect.flip(memory.snapshot(10))
      expect(read.message).toContain(`${history} is a symbolic link`)
      expect(fs.readFileSync(target, "utf8")).toBe("# login script\n")
    }))

  it.effect("summary.md, the ledger and the inbox journal as symlinks are refused at start-up; a compaction replaces the link, never writes through it", () =>
    Effect.gen(function*() {
      for (const name of ["summary.md", ".history-ledger.json", ".inbox.jsonl"]) {
        const directory = yield* tempDir()
        const target = bait(directory)
        fs.symlinkSync(target, path.join(directory, name))
        const refused = yield* Effect.flip(Memory.ensureWritable(directory))
        expect(refused.message).toBe(`${path.join(directory, name)} is a symbolic link; refusing to follow it (make it a regular file)`)
        if (name === ".inbox.jsonl") {
          const inbox = yield* Effect.flip(Inbox.make(directory))
          expect(inbox.message).toContain(`${path.join(directory, name)} is a symbolic link`)
        } else {
          const memory = yield* Memory.make(directory)
          const folds = FoldStore.make(memory.memoryDir)
          yield* memory.append(exchange("a", "b"), { exchange: "k" }).pipe(Effect.ignore)
          yield* memory.append(exchange("c", "d"))
          const plan = yield* folds.planFold(0)
          yield* folds.commitFold(Option.getOrThrow(plan), "new summary").pipe(Effect.ignore)
        }
        expect(fs.readFileSync(target, "utf8"), name).toBe("# login script\n")
      }
    }))

  it.effect("a compaction's next files left as links or stale files are replaced, never written through", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const target = bait(directory)
      // Leftovers of a compaction that died before its journal: each staged name is removed first, never followed.
      // A dangling link is one that recovery's look (which follows links) does not see: only the staging removes it.
      fs.symlinkSync(target, path.join(directory, ".summary.md.next"))
      fs.symlinkSync(path.join(directory, "nowhere"), path.join(directory, ".history.jsonl.next"))
      fs.writeFileSync(path.join(directory, ".history-ledger.json.next"), "stale")
      const memory = yield* Memory.make(directory)
      const folds = FoldStore.make(memory.memoryDir)
      yield* memory.append(exchange("a", "b"), { exchange: "k1" })
      yield* memory.append(exchange("c", "d"), { exchange: "k2" })
      const plan = yield* folds.planFold(2)
      yield* folds.commitFold(Option.getOrThrow(plan), "new summary")
      expect(fs.readFileSync(target, "utf8")).toBe("# login script\n")
      expect(fs.existsSync(path.join(directory, "nowhere"))).toBe(false)
      expect(fs.readFileSync(path.join(directory, "summary.md"), "utf8").trim()).toBe("new summary")
      expect((yield* memory.snapshot(10)).history.map((entry) => entry.content)).toEqual(["c", "d"])
      expect(fs.readdirSync(directory).filter((name) => name.endsWith(".next"))).toEqual([])
    }))

  it.effect("a FIFO or a directory named history.jsonl is refused without hanging", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const history = path.join(directory, "history.jsonl")
      child.execFileSync("mkfifo", [history])
      const refused = yield* Effect.flip(Memory.ensureWritable(directory))
      expect(refused.message).toBe(`${history} is not a regular file; refusing to use it as memory`)
      const memory = yield* Memory.make(directory)
      expect((yield* Effect.flip(memory.snapshot(10))).message).toContain("is not a regular file")
      expect((yield* Effect.flip(memory.append(exchange("a", "b")))).message).toContain("is not a regular file")
    }))

  it.effect("a memory file owned by another user is refused", () =>
    Effect.gen(function*() {
      const { directory, memory } = yield* setup({ "history.jsonl": line("user", "u") })
      const history = path.join(directory, "history.jsonl")
      const owner = fs.statSync(history).uid
      // Seen as another user: the files here are then someone else's.
      const spy = vi.spyOn(process as { getuid: () => number }, "getuid").mockReturnValue(owner + 1)
      yield* Effect.addFinalizer(() => Effect.sync(() => spy.mockRestore()))
      const refused = yield* Effect.flip(Memory.ensureWritable(directory))
      expect(refused.message).toBe(
        `${history} is owned by uid ${owner}, not by this user (uid ${owner + 1}); refusing to use it as memory`
      )
      expect((yield* Effect.flip(memory.append(exchange("a", "b")))).message).toContain(`${history} is owned by uid ${owner}`)
      spy.mockRestore()
      expect(fs.readFileSync(history, "utf8")).toBe(line("user", "u"))
    }))
})

describe("a history line of many megabytes", () => {
  it("is cut to 16 KiB in a request, on a character boundary, saying how much went", () => {
    const short = "a".repeat(HISTORY_LINE_MAX_BYTES)
    expect(capText(short)).toBe(short)
    const long = "é".repeat(3 * 1024 * 1024)
    const cut = capText(long)
    const kept = cut.slice(0, cut.indexOf("…[cut: "))
    expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(HISTORY_LINE_MAX_BYTES)
    expect(kept).toBe("é".repeat(HISTORY_LINE_MAX_BYTES / 2))
    expect(cut).toBe(`${kept}…[cut: ${Buffer.byteLength(long) - Buffer.byteLength(kept)} bytes]`)
    expect(promptMemo().conversation([{ role: "user", content: long }], "next")[0]!.content).toBe(cut)
  })

  it.effect("is sent cut with every turn, and kept whole in history.jsonl", () =>
    Effect.gen(function*() {
      const huge = `start ${"z".repeat(8 * 1024 * 1024)} end`
      const history = line("user", "paste this") + line("assistant", huge)
      const h = yield* harness({ history, script: [text("ok")], settings: { PLANCKCLAW_PROMPT_CACHE: "0" } })
      yield* h.say("next")
      yield* h.finish
      const [request] = yield* h.requests
      const sent = request!.messages[1]!.content as string
      expect(sent.startsWith("start zzz")).toBe(true)
      expect(sent).toMatch(/…\[cut: \d+ bytes\]$/)
      expect(JSON.stringify(request).length).toBeLessThan(20 * 1024)
      expect(h.read("history.jsonl")).toBe(history + line("user", "next") + line("assistant", "ok"))
    }))
})
