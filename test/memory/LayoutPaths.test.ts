/**
 * The memory files' paths (Layout.files) are built from one path.join of
 * the directory, then a concatenation per file: they must be exactly what
 * path.join(directory, name) gives, for any spelling of the directory.
 */
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Layout from "../../src/memory/Layout.js"

const names: Record<keyof ReturnType<typeof Layout.files>, string> = {
  soul: "soul.md",
  summary: "summary.md",
  history: "history.jsonl",
  ledger: ".history-ledger.json",
  inbox: ".inbox.jsonl",
  unreadReplies: ".interact-out.unread",
  writeLock: ".planckclaw-write.lock",
  compactionLock: ".planckclaw-compact.lock",
  journal: ".compaction-commit",
  nextSummary: ".summary.md.next",
  nextHistory: ".history.jsonl.next",
  nextLedger: ".history-ledger.json.next"
}

describe("Layout.files", () => {
  it("gives each file as path.join(directory, name) does, however the directory is spelt", () => {
    const directories = ["", ".", "/", "..", "../..", "memory", "memory/", "a//b/", "./m", "/x/y/../z", "a/./b/.", "/tmp/agents/alice", "a b/c"]
    for (const directory of directories) {
      const files = Layout.files(directory)
      expect(Object.keys(files).sort()).toEqual(Object.keys(names).sort())
      for (const [key, name] of Object.entries(names)) {
        expect([directory, files[key as keyof typeof names]]).toEqual([directory, path.join(directory, name)])
      }
    }
  })
})
