/**
 * The snapshot's cached history window as this process appends: it keeps
 * the last `keep` lines across appends, with a line that did not decode
 * still counted in the window but left out of the history.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Memory from "../../src/memory/Memory.js"
import { tempDir } from "../support/Sandbox.js"

const entry = (role: "user" | "assistant", content: string): Memory.HistoryEntry => ({ role, content })

it.effect("appends move the cached window by the lines written, a skipped line counted, as a fresh read sees it", () =>
  Effect.gen(function*() {
    const directory = yield* tempDir()
    const lines = [`{"role":"user","content":"q0"}`, `not an exchange`, `{"role":"assistant","content":"a0"}`]
    fs.writeFileSync(path.join(directory, "history.jsonl"), `${lines.join("\n")}\n`)
    const memory = yield* Memory.make(directory)
    expect((yield* memory.snapshot(4)).history).toEqual([entry("user", "q0"), entry("assistant", "a0")])
    yield* memory.append([entry("user", "q1"), entry("assistant", "a1")], { exchange: "k1" })
    // Window of 4: "not an exchange", a0, q1, a1.
    expect((yield* memory.snapshot(4)).history).toEqual([entry("assistant", "a0"), entry("user", "q1"), entry("assistant", "a1")])
    yield* memory.append([entry("user", "q2"), entry("assistant", "a2"), entry("user", "q3")], { exchange: "k2" })
    const cached = (yield* memory.snapshot(4)).history
    expect(cached).toEqual([entry("assistant", "a1"), entry("user", "q2"), entry("assistant", "a2"), entry("user", "q3")])
    // The same as a process reading the file afresh.
    const fresh = yield* Memory.make(directory)
    expect((yield* fresh.snapshot(4)).history).toEqual(cached)
    // An append of more lines than the window holds keeps only the newest.
    yield* memory.append([1, 2, 3, 4, 5].map((i) => entry("user", `m${i}`)), { exchange: "k3" })
    expect((yield* memory.snapshot(4)).history.map((e) => e.content)).toEqual(["m2", "m3", "m4", "m5"])
  }))
