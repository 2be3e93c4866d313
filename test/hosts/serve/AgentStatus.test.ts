/**
 * A host's status reader (AgentStatus.makeReader) counts an agent's history
 * lines through the one buffer it owns: across the buffer's 64 KiB chunks, a
 * last line without its newline counted, and each reader's counts its own.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as AgentStatus from "../../../src/hosts/serve/AgentStatus.js"
import { tempDir } from "./Kit.js"

const agentWith = (root: string, id: string, history: string): string => {
  const directory = path.join(root, id)
  fs.mkdirSync(directory)
  fs.writeFileSync(path.join(directory, "history.jsonl"), history)
  return directory
}

describe("AgentStatus.makeReader", () => {
  it("counts lines across chunks and a last line without its newline, one reader after another", () => {
    const root = tempDir()
    // 3000 lines of 100 bytes: about 4.6 chunks.
    const long = agentWith(root, "long", `${"x".repeat(99)}\n`.repeat(3000))
    const torn = agentWith(root, "torn", "one\ntwo\nthree")
    const first = AgentStatus.makeReader()
    const second = AgentStatus.makeReader()
    expect(first.read("long", long, true)).toMatchObject({ id: "long", historyLines: 3000, state: "running" })
    expect(second.read("torn", torn, false)).toMatchObject({ id: "torn", historyLines: 3, state: "released" })
    expect(first.read("torn", torn, false).historyLines).toBe(3)
    expect(second.read("long", long, false).historyLines).toBe(3000)
  })
})
