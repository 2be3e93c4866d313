/** Lines read backwards from an offset, across block boundaries, as a forward split of the same bytes gives them. */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as BackwardLines from "../../src/memory/BackwardLines.js"

const withFile = <A>(content: string, use: (fd: number) => A): A => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-backward-")), "lines")
  fs.writeFileSync(file, content)
  const fd = fs.openSync(file, "r")
  try {
    return use(fd)
  } finally {
    fs.closeSync(fd)
    fs.rmSync(path.dirname(file), { recursive: true })
  }
}

/** What reading forward gives: each non-blank line ending at or before `end`, with its offset, newest first. */
const forward = (content: string, end: number) => {
  const found: Array<BackwardLines.LineAt> = []
  let offset = 0
  for (const line of Buffer.from(content).subarray(0, end).toString("utf8").split("\n")) {
    if (line.trim() !== "") found.push({ line, offset })
    offset += Buffer.byteLength(line) + 1
  }
  return found.reverse()
}

describe("BackwardLines", () => {
  const cases = {
    empty: "",
    "no final newline": "a\nbb\nccc",
    "blank lines": "\n\na\n\n \nb\n\n",
    // Lines longer than a block (64 KiB), one holding multi-byte characters cut by a boundary.
    "across blocks": `${"x".repeat(70_000)}\n${"é".repeat(40_000)}\nshort\n${"y".repeat(140_000)}\n`
  }
  for (const [name, content] of Object.entries(cases)) {
    it(`reads ${name} as a forward split does, from any line's end`, () =>
      withFile(content, (fd) => {
        const size = Buffer.byteLength(content)
        const ends = [size, ...forward(content, size).map((line) => line.offset)]
        for (const end of ends) {
          const seen: Array<BackwardLines.LineAt> = []
          BackwardLines.visitBackward(fd, end, (line) => {
            seen.push(line)
            return true
          })
          expect(seen).toEqual(forward(content, end))
        }
      }))
  }

  it("pages: each page's next is where the following page ends, null at the first line", () =>
    withFile("one\ntwo\nthree\nfour\nfive\n", (fd) => {
      const first = BackwardLines.pageBackward(fd, BackwardLines.sizeOf(fd), 2, (line) => line.line)
      expect(first.items).toEqual(["five", "four"])
      const second = BackwardLines.pageBackward(fd, first.next!, 2, (line) => line.line)
      expect(second.items).toEqual(["three", "two"])
      const last = BackwardLines.pageBackward(fd, second.next!, 2, (line) => line.line)
      expect([last.items, last.next]).toEqual([["one"], null])
    }))
})
