import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as SqlMemory from "../../../src/memory/sql/SqlMemory.js"
import * as SqlTransfer from "../../../src/memory/sql/SqlTransfer.js"
import * as Cli from "../../support/Cli.js"
import { usePostgres } from "../../support/Postgres.js"
import { tempDir } from "../../support/Sandbox.js"
import { freshDatabase, migrated } from "../../memory/sql/SqlKit.js"

const server = usePostgres()

// Every oddity a history.jsonl can hold, each of which must come back byte for byte.
const oddHistory = [
  `{"role":"user","content":"héllo wörld 👋 日本語"}`,
  `{"role":"assistant","content":"line\\nbreak \\"quoted\\" tab\\t back\\\\slash \\u2028 sep"}`,
  `{"role":"user","content":"\\u00e9 escaped the long way"}`,
  `{"content":"keys swapped","role":"assistant"}`,
  `{ "role": "user", "content": "spaced out" }`,
  `{"role":"user","content":"extra keys","ts":123}`,
  `{"role":"assistant","content":"nul \\u0000 inside"}`,
  `not json at all`,
  ``,
  `{"role":"system","content":"not a history role"}`,
  `{"role":"user","content":"crlf"}\r`,
  `{"role":"assistant","content":"last"}`
].join("\n") + "\n"

const summaryText = "Marc likes dice — and «quotes».\n\nSecond paragraph, no final newline"

const writeFiles = (directory: string, files: Record<string, string | Buffer>) => {
  fs.mkdirSync(directory, { recursive: true })
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(directory, name), content)
}

const inDatabase = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const url = yield* freshDatabase(yield* server)
    return yield* effect.pipe(Effect.provide(migrated(url)))
  })

describe("memory export/import", () => {
  it.effect("files → database → files is byte for byte, oddities included, and the agent reads and appends in between", () =>
    inDatabase(Effect.gen(function*() {
      const root = yield* tempDir()
      const source = path.join(root, "source")
      writeFiles(source, { "history.jsonl": oddHistory, "summary.md": summaryText, "soul.md": "You are Ada.\n" })
      const imported = yield* SqlTransfer.importAgent("alice", source)
      expect(imported).toEqual({ lines: 12, summary: true, soul: true, usage: 0, usageSkipped: 0 })

      const back = path.join(root, "back")
      expect((yield* SqlTransfer.exportAgent("alice", back)).lines).toBe(12)
      for (const name of ["history.jsonl", "summary.md", "soul.md"]) {
        expect(fs.readFileSync(path.join(back, name)).equals(fs.readFileSync(path.join(source, name)))).toBe(true)
      }

      // The imported memory is the agent's: the readable lines, in order, and appends after them.
      const memory = yield* SqlMemory.make("alice")
      const snapshot = yield* memory.snapshot(4)
      expect(snapshot.soul).toBe("You are Ada.")
      expect(snapshot.summary).toBe(summaryText)
      expect(snapshot.history).toEqual([{ role: "user", content: "crlf" }, { role: "assistant", content: "last" }])
      yield* memory.append([{ role: "user", content: "new ✓" }, { role: "assistant", content: "ok" }])
      const after = path.join(root, "after")
      yield* SqlTransfer.exportAgent("alice", after)
      expect(fs.readFileSync(path.join(after, "history.jsonl"), "utf8")).toBe(
        oddHistory + `{"role":"user","content":"new ✓"}\n{"role":"assistant","content":"ok"}\n`
      )
    })))

  it.effect("keeps a missing final newline, an absent summary, and the usage ledger", () =>
    inDatabase(Effect.gen(function*() {
      const root = yield* tempDir()
      const usage = `{"at":"2026-11-30T10:00:00.123Z","kind":"turn","brain":"anthropic","model":"m","ms":812,"input":10,"output":5,"cache_write":0,"cache_read":3}\n`
      writeFiles(path.join(root, "in"), {
        "history.jsonl": `{"role":"user","content":"a"}\n{"role":"assistant","content":"b"}`,
        "usage.jsonl": `${usage}not a usage line\n`
      })
      expect(yield* SqlTransfer.importAgent("bob", path.join(root, "in"))).toMatchObject({ usage: 1, usageSkipped: 1 })
      yield* SqlTransfer.exportAgent("bob", path.join(root, "out"))
      expect(fs.readFileSync(path.join(root, "out", "history.jsonl"), "utf8")).toBe(`{"role":"user","content":"a"}\n{"role":"assistant","content":"b"}`)
      expect(fs.existsSync(path.join(root, "out", "summary.md"))).toBe(false)
      expect(fs.readFileSync(path.join(root, "out", "usage.jsonl"), "utf8")).toBe(usage)
    })))

  it.effect("a summary.md holding a NUL comes back byte for byte; a soul.md holding one is refused", () =>
    inDatabase(Effect.gen(function*() {
      const root = yield* tempDir()
      const summary = "Marc likes dice.\u0000 (a NUL a model answered)\n"
      writeFiles(path.join(root, "in"), { "summary.md": summary })
      yield* SqlTransfer.importAgent("erin", path.join(root, "in"))
      expect((yield* (yield* SqlMemory.make("erin")).snapshot(0)).summary).toBe(summary.trim())
      yield* SqlTransfer.exportAgent("erin", path.join(root, "out"))
      expect(fs.readFileSync(path.join(root, "out", "summary.md"), "utf8")).toBe(summary)
      writeFiles(path.join(root, "souled"), { "summary.md": "s\n", "soul.md": "You are\u0000 Ada.\n" })
      const refused = yield* Effect.flip(SqlTransfer.importAgent("fred", path.join(root, "souled")))
      expect(refused.message).toContain("soul.md: it holds a NUL byte, which PostgreSQL text cannot store")
    })))

  it.effect("refuses, changing nothing: memory already there, a directory holding memory, a file that is not UTF-8", () =>
    inDatabase(Effect.gen(function*() {
      const root = yield* tempDir()
      writeFiles(path.join(root, "one"), { "history.jsonl": `{"role":"user","content":"one"}\n` })
      writeFiles(path.join(root, "two"), { "history.jsonl": `{"role":"user","content":"two"}\n` })
      writeFiles(path.join(root, "bad"), { "history.jsonl": Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0x0a]) })
      yield* SqlTransfer.importAgent("carol", path.join(root, "one"))
      const again = yield* Effect.flip(SqlTransfer.importAgent("carol", path.join(root, "two")))
      expect(again.message).toContain("already has memory in the database")
      const bad = yield* Effect.flip(SqlTransfer.importAgent("dave", path.join(root, "bad")))
      expect(bad.message).toContain("not valid UTF-8")
      const occupied = yield* Effect.flip(SqlTransfer.exportAgent("carol", path.join(root, "two")))
      expect(occupied.message).toContain("already holds history.jsonl")
      expect(fs.readFileSync(path.join(root, "two", "history.jsonl"), "utf8")).toBe(`{"role":"user","content":"two"}\n`)
      // --replace overwrites, whole.
      yield* SqlTransfer.importAgent("carol", path.join(root, "two"), { replace: true })
      yield* SqlTransfer.exportAgent("carol", path.join(root, "check"))
      expect(fs.readFileSync(path.join(root, "check", "history.jsonl"), "utf8")).toBe(`{"role":"user","content":"two"}\n`)
    })))
  it.effect("refuses, reading nothing it should not: a symbolic link, a FIFO, a directory, a file over the size an import reads", () =>
    inDatabase(Effect.gen(function*() {
      const root = yield* tempDir()
      const elsewhere = path.join(root, "elsewhere.jsonl")
      fs.writeFileSync(elsewhere, `{"role":"user","content":"not this directory's"}\n`)
      const cases: Array<[string, (file: string) => void, string]> = [
        ["linked", (file) => fs.symlinkSync(elsewhere, file), "it is a symbolic link; refusing to follow it"],
        // A FIFO would block a plain read forever, with no writer ever coming.
        ["fifo", (file) => child.execFileSync("mkfifo", [file]), "it is not a regular file"],
        ["folder", (file) => fs.mkdirSync(file), "it is not a regular file"],
        // Sparse: its size is all that is read.
        ["huge", (file) => {
          fs.writeFileSync(file, "")
          fs.truncateSync(file, SqlTransfer.MAX_IMPORT_BYTES + 1)
        }, `it holds ${SqlTransfer.MAX_IMPORT_BYTES + 1} bytes, over the 256 MiB an import reads`]
      ]
      for (const [name, make, why] of cases) {
        const directory = path.join(root, name)
        fs.mkdirSync(directory)
        make(path.join(directory, "history.jsonl"))
        const refused = yield* Effect.flip(SqlTransfer.importAgent(name, directory))
        expect(refused.message).toContain(`cannot import ${path.join(directory, "history.jsonl")}: ${why}`)
        // Refused before the transaction: the agent has no memory in the database.
        const none = yield* Effect.flip(SqlTransfer.exportAgent(name, path.join(root, `${name}-out`)))
        expect(none.message).toBe(`agent ${name} has no memory in the database`)
      }
    })))
  it.effect("refuses a directory whose inbox journal holds messages a run did not finish; one left empty or finished is imported", () =>
    inDatabase(Effect.gen(function*() {
      const root = yield* tempDir()
      const record = (value: object) => `${JSON.stringify(value)}\n`
      const history = `{"role":"user","content":"hi"}\n`
      // What a clean stop leaves: a message taken from the pipe for the next start to answer, and
      // an exchange answered on a full disk that waits for room in history.
      const pending = path.join(root, "pending")
      writeFiles(pending, {
        "history.jsonl": history,
        ".inbox.jsonl": record({ accepted: 1, key: "k1", channel: "cli", text: "still to answer" }) +
          record({ accepted: 2, key: "k2", channel: "cli", text: "answered" }) + record({ answered: 2, reply: "r", stored: true }) +
          record({ unstored: 2 }) + record({ delivered: 2 })
      })
      const refused = yield* Effect.flip(SqlTransfer.importAgent("ivy", pending))
      expect(refused.message).toBe(
        `cannot import ${pending}: its inbox journal (.inbox.jsonl) holds 2 message(s) a run accepted and did not finish ` +
          "(not answered yet, or answered and not yet in history); start planckclaw run on it once, stop it when they are answered, then import"
      )
      const none = yield* Effect.flip(SqlTransfer.exportAgent("ivy", path.join(root, "ivy-out")))
      expect(none.message).toBe("agent ivy has no memory in the database")
      // Finished (or emptied, as an idle run leaves it): imported.
      const finished = path.join(root, "finished")
      writeFiles(finished, {
        "history.jsonl": history,
        ".inbox.jsonl": record({ accepted: 1, key: "k1", channel: "cli", text: "done" }) + record({ delivered: 1 })
      })
      expect((yield* SqlTransfer.importAgent("jay", finished)).lines).toBe(1)
      writeFiles(path.join(root, "idle"), { "history.jsonl": history, ".inbox.jsonl": "" })
      expect((yield* SqlTransfer.importAgent("kim", path.join(root, "idle"))).lines).toBe(1)
    })))
  it.effect("an export killed before its last rename is never imported as whole, and exporting again replaces what it left", () =>
    inDatabase(Effect.gen(function*() {
      const root = yield* tempDir()
      writeFiles(path.join(root, "in"), { "history.jsonl": `{"role":"user","content":"a"}\n`, "summary.md": "kept\n" })
      yield* SqlTransfer.importAgent("gus", path.join(root, "in"))
      // What a kill leaves: history.jsonl renamed into place, summary.md still under its temporary name.
      const cut = path.join(root, "cut")
      writeFiles(cut, { "history.jsonl": `{"role":"user","content":"a"}\n`, "summary.md.exporting": "kept\n" })
      const refused = yield* Effect.flip(SqlTransfer.importAgent("hal", cut))
      expect(refused.message).toBe(
        `cannot import ${cut}: an export into it did not finish (summary.md.exporting is left); export again into a new directory`
      )
      // A kill before any rename leaves temporaries only: the next export writes over them.
      const early = path.join(root, "early")
      writeFiles(early, { "history.jsonl.exporting": "half a li" })
      expect(yield* SqlTransfer.exportAgent("gus", early)).toEqual({ lines: 1, summary: true, soul: false, usage: 0 })
      expect(fs.readdirSync(early).sort()).toEqual(["history.jsonl", "summary.md"])
      expect(fs.readFileSync(path.join(early, "history.jsonl"), "utf8")).toBe(`{"role":"user","content":"a"}\n`)
    })))
})

describe("planckclaw memory (the built command)", () => {
  it.effect("imports and exports through PLANCKCLAW_DATABASE_URL, and never shows its password", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase(yield* server)
      const root = yield* tempDir()
      writeFiles(path.join(root, "in"), { "history.jsonl": oddHistory, "summary.md": summaryText, "usage.jsonl": "{\"torn\":\n" })
      const env = Cli.baseEnv({ PLANCKCLAW_DATABASE_URL: url })
      const imported = yield* Cli.run(["memory", "import", "--agent", "alice", path.join(root, "in")], { cwd: root, env })
      expect(imported.stdout).toContain("imported agent alice")
      expect(imported.stdout).toContain("1 usage line(s) left out (torn, or not a usage line)")
      expect(imported.code).toBe(0)
      const exported = yield* Cli.run(["memory", "export", "--agent", "alice", path.join(root, "out")], { cwd: root, env })
      expect(exported.code).toBe(0)
      expect(fs.readFileSync(path.join(root, "out", "history.jsonl"), "utf8")).toBe(oddHistory)
      expect(fs.readFileSync(path.join(root, "out", "summary.md"), "utf8")).toBe(summaryText)

      const password = (yield* server).password
      const wrong = url.replace(`:${password}@`, ":not-the-password@")
      const refused = yield* Cli.run(["memory", "export", "--agent", "alice", path.join(root, "x")], {
        cwd: root,
        env: Cli.baseEnv({ PLANCKCLAW_DATABASE_URL: wrong })
      })
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain("password authentication failed")
      expect(refused.stderr + refused.stdout).not.toContain("not-the-password")
      const again = yield* Cli.run(["memory", "import", "--agent", "alice", path.join(root, "in")], { cwd: root, env })
      expect(again.code).toBe(1)
      expect(again.stderr + again.stdout).not.toContain(password)
    }))
})
