import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { text } from "../../src/brain/ScriptedBrain.js"
import * as Inbox from "../../src/memory/Inbox.js"
import { harness, line } from "../support/Harness.js"
import { tempDir } from "../support/Sandbox.js"

const journal = (...records: ReadonlyArray<object>) => records.map((record) => `${JSON.stringify(record)}\n`).join("")

describe("Inbox journal", () => {
  it("replays what is still pending, in order, ignoring torn lines", () => {
    const pending = Inbox.replay(
      journal(
        { accepted: 1, channel: "a", text: "one" },
        { accepted: 2, channel: "b", text: "two" },
        { answered: 1, reply: "r1", stored: true },
        { delivered: 1 },
        { accepted: 3, channel: "c", text: "three" },
        { answered: 3, reply: "r3", stored: false }
      ) + "{\"accepted\":4,\"chan"
    )
    expect(pending).toEqual([
      { id: 2, channel: "b", text: "two", reply: Option.none() },
      { id: 3, channel: "c", text: "three", reply: Option.some({ text: "r3", stored: false }) }
    ])
  })

  it.effect("journals a message's Idempotency-Key with it, and replays journals that have none", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const inbox = yield* Inbox.make(directory)
      const keyed = yield* inbox.accept({ channel: "http", text: "pay", idempotencyKey: "k-1" })
      const plain = yield* inbox.accept({ channel: "http", text: "ship" })
      expect(keyed.idempotencyKey).toBe("k-1")
      expect("idempotencyKey" in plain).toBe(false)
      const restarted = yield* Inbox.make(directory)
      expect(restarted.recovered.map((p) => [p.channel, p.text, p.idempotencyKey])).toEqual([
        ["http", "pay", "k-1"],
        ["http", "ship", undefined]
      ])
      // A journal written before the field existed.
      expect(Inbox.replay(journal({ accepted: 1, key: "aaaa", channel: "http", text: "old" }))).toEqual([
        { id: 1, key: "aaaa", channel: "http", text: "old", reply: Option.none() }
      ])
    }))

  it.effect("accepts several messages at once, in order, each with an id and key of its own, and a next start has them", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const inbox = yield* Inbox.make(directory)
      const first = yield* inbox.accept({ channel: "cli", text: "before" })
      const read = yield* inbox.acceptAll!([{ channel: "cli", text: "one" }, { channel: "b", text: "two" }, { channel: "cli", text: "three" }])
      expect(read.map((p) => p.id)).toEqual([first.id + 1, first.id + 2, first.id + 3])
      expect(new Set([first, ...read].map((p) => p.key)).size).toBe(4)
      yield* inbox.delivered(read[1]!)
      const records = fs.readFileSync(path.join(directory, ".inbox.jsonl"), "utf8").split("\n").slice(0, -1).map((record) => JSON.parse(record))
      expect(records).toMatchObject([
        { accepted: first.id, text: "before" },
        { accepted: read[0]!.id, channel: "cli", text: "one", key: read[0]!.key },
        { accepted: read[1]!.id, channel: "b", text: "two" },
        { accepted: read[2]!.id, channel: "cli", text: "three" },
        { delivered: read[1]!.id }
      ])
      const restarted = yield* Inbox.make(directory)
      expect(restarted.recovered.map((p) => p.text)).toEqual(["before", "one", "three"])
    }))

  it.effect("a journal torn by a crash is cut back to its last whole record at start, and the next record follows it", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const file = path.join(directory, ".inbox.jsonl")
      fs.writeFileSync(file, journal({ accepted: 1, key: "k1", channel: "cli", text: "kept" }) + "{\"accepted\":2,\"te")
      const inbox = yield* Inbox.make(directory)
      expect(inbox.recovered.map((p) => p.text)).toEqual(["kept"])
      const next = yield* inbox.accept({ channel: "cli", text: "after" })
      const records = fs.readFileSync(file, "utf8").split("\n")
      expect(records.at(-1)).toBe("")
      expect(records.slice(0, -1).map((record) => JSON.parse(record))).toMatchObject([
        { accepted: 1, text: "kept" },
        { accepted: next.id, text: "after" }
      ])
    }))

  it.effect("closes a cancelled message with a record of its own: a restart does not answer it", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const file = path.join(directory, ".inbox.jsonl")
      const inbox = yield* Inbox.make(directory)
      const cancelled = yield* inbox.accept({ channel: "cli", text: "never mind" })
      const kept = yield* inbox.accept({ channel: "cli", text: "still wanted" })
      yield* inbox.cancelled!(cancelled)
      expect(fs.readFileSync(file, "utf8")).toContain(`{"cancelled":${cancelled.id}}`)
      const restarted = yield* Inbox.make(directory)
      expect(restarted.recovered.map((p) => p.text)).toEqual(["still wanted"])
      expect(Inbox.replay(journal({ accepted: 1, channel: "a", text: "x" }, { cancelled: 1 }))).toEqual([])
      // Nothing left: the journal starts afresh, as after a delivery.
      yield* restarted.cancelled!(restarted.recovered[0]!)
      expect(fs.readFileSync(file, "utf8")).toBe("")
      expect(kept.id).toBe(cancelled.id + 1)
    }))

  it.effect("empties itself when nothing is pending, and numbers on after a restart", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const file = path.join(directory, ".inbox.jsonl")
      const inbox = yield* Inbox.make(directory)
      const first = yield* inbox.accept({ channel: "c", text: "hi" })
      const second = yield* inbox.accept({ channel: "c", text: "there" })
      yield* inbox.answered(first, "hello", true)
      yield* inbox.delivered(first)
      expect(fs.readFileSync(file, "utf8")).toContain("\"delivered\":1")
      const restarted = yield* Inbox.make(directory)
      expect(restarted.recovered.map((p) => p.id)).toEqual([second.id])
      yield* inbox.delivered(second)
      expect(fs.readFileSync(file, "utf8")).toBe("")
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    }))
})

describe("a journal removed or cut while the agent runs", () => {
  it.effect("is made again holding every message still pending, each as far as it got, before the next record", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const file = path.join(directory, ".inbox.jsonl")
      const inbox = yield* Inbox.make(directory)
      const answered = yield* inbox.accept({ channel: "c", text: "answered before" })
      yield* inbox.answered(answered, "its reply", true)
      const waiting = yield* inbox.accept({ channel: "c", text: "waiting before" })
      const done = yield* inbox.accept({ channel: "c", text: "done before" })
      yield* inbox.delivered(done)
      fs.rmSync(file)
      const after = yield* inbox.accept({ channel: "c", text: "after" })
      const restarted = yield* Inbox.make(directory)
      expect(restarted.recovered.map((p) => [p.text, p.reply])).toEqual([
        ["answered before", Option.some({ text: "its reply", stored: true })],
        ["waiting before", Option.none()],
        ["after", Option.none()]
      ])
      expect(restarted.recovered.map((p) => p.key)).toEqual([answered.key, waiting.key, after.key])
    }))

  it.effect("with the memory directory removed, what is accepted meanwhile is journaled once the directory is made again", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const inbox = yield* Inbox.make(directory)
      yield* inbox.accept({ channel: "c", text: "before" })
      fs.rmSync(directory, { recursive: true })
      // No directory: this record cannot be written (logged), the message is kept in the process.
      const meanwhile = yield* inbox.accept({ channel: "c", text: "meanwhile" })
      // Made again, as the next append to history does.
      fs.mkdirSync(directory, { mode: 0o700 })
      yield* inbox.answered(meanwhile, "answer", true)
      const restarted = yield* Inbox.make(directory)
      expect(restarted.recovered.map((p) => p.text)).toEqual(["before", "meanwhile"])
    }))

  it.effect("grown by another inbox on it (a serve agent's instance closing while its successor starts) is appended to as it is, nothing written twice", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const file = path.join(directory, ".inbox.jsonl")
      const closing = yield* Inbox.make(directory)
      const first = yield* closing.accept({ channel: "c", text: "one" })
      const starting = yield* Inbox.make(directory)
      yield* closing.answered(first, "r", true)
      yield* starting.accept({ channel: "c", text: "two" })
      expect(fs.readFileSync(file, "utf8").split("\n").slice(0, -1).map((record) => JSON.parse(record))).toMatchObject([
        { accepted: 1, text: "one" },
        { answered: 1, reply: "r" },
        { accepted: 2, text: "two" }
      ])
    }))

  it.effect("emptied by hand, it is written again from its start, not after a gap where the old records were", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const file = path.join(directory, ".inbox.jsonl")
      const inbox = yield* Inbox.make(directory)
      yield* inbox.accept({ channel: "c", text: "first" })
      fs.truncateSync(file, 0)
      yield* inbox.accept({ channel: "c", text: "second" })
      expect(fs.readFileSync(file, "utf8").split("\n").slice(0, -1).map((record) => JSON.parse(record))).toMatchObject([
        { accepted: 1, text: "first" },
        { accepted: 2, text: "second" }
      ])
    }))
})

describe("after a crash", () => {
  it.effect("answers a message the previous run accepted but never answered, before new ones", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        inbox: journal({ accepted: 7, channel: "discord-1", text: "are you there?" }),
        script: [text("yes, back now"), text("second")]
      })
      expect(yield* h.reply).toMatchObject({ channel: "discord-1", text: "yes, back now" })
      expect(yield* h.say("new")).toMatchObject({ channel: "cli", text: "second" })
      expect(h.read("history.jsonl")).toBe(
        line("user", "are you there?") + line("assistant", "yes, back now") + line("user", "new") +
          line("assistant", "second")
      )
      yield* h.finish
      expect(h.read(".inbox.jsonl")).toBe("")
    }))

  it.effect("delivers a reply decided before the crash without asking the brain again or storing it twice", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        history: line("user", "q") + line("assistant", "decided answer"),
        inbox: journal(
          { accepted: 1, channel: "c", text: "q" },
          { answered: 1, reply: "decided answer", stored: true }
        ),
        script: []
      })
      expect(yield* h.reply).toMatchObject({ channel: "c", text: "decided answer" })
      yield* h.finish
      expect(yield* h.requests).toHaveLength(0)
      expect(h.read("history.jsonl")).toBe(line("user", "q") + line("assistant", "decided answer"))
    }))

  it.effect("stores a reply decided before the crash when history did not get it yet", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        history: line("user", "older") + line("assistant", "older answer"),
        inbox: journal(
          { accepted: 1, channel: "c", text: "q" },
          { answered: 1, reply: "decided answer", stored: true }
        ),
        script: []
      })
      expect(yield* h.reply).toMatchObject({ channel: "c", text: "decided answer" })
      yield* h.finish
      expect(h.read("history.jsonl")).toBe(
        line("user", "older") + line("assistant", "older answer") + line("user", "q") + line("assistant", "decided answer")
      )
    }))
})
