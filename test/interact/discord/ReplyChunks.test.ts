import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { chunkReply, discordMessageLimit } from "../../../src/interact/discord/ReplyChunks.js"

const fenceCount = (text: string): number => text.split("```").length - 1
const isOpenAt = (text: string, position: number): boolean => fenceCount(text.slice(0, position)) % 2 === 1
const lonePattern = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const isBlank = (text: string): boolean => text.trim() === ""

/**
 * Walks the input alongside the chunks: each chunk, once the fence lines the
 * chunker added are taken off, must be the next stretch of the input, with
 * only whitespace skipped between stretches and at the end. A chunk ending in
 * "\n```" may have had that closer added or taken from the input, so both
 * readings are tried.
 */
const reassembles = (input: string, chunks: ReadonlyArray<string>, index = 0, position = 0): boolean => {
  const chunk = chunks[index]
  if (chunk === undefined) return isBlank(input.slice(position))
  let body = chunk
  if (isOpenAt(input, position)) {
    const reopener = /^```[^\n`]*\n/.exec(body)
    if (reopener === null) return false
    body = body.slice(reopener[0].length)
  }
  const readings = body.endsWith("\n```")
    ? [{ text: body, closedByUs: false }, { text: body.slice(0, -4), closedByUs: true }]
    : [{ text: body, closedByUs: false }]
  return readings.some(({ closedByUs, text }) => {
    for (let start = position; start <= input.length; start++) {
      const end = start + text.length
      if (
        input.startsWith(text, start) && isOpenAt(input, end) === closedByUs &&
        reassembles(input, chunks, index + 1, end)
      ) return true
      if (!/\s/.test(input[start] ?? "")) return false
    }
    return false
  })
}

/** A chunk that is a code block with nothing in it (only sent when the reply has one itself). */
const emptyBlock = /^```[^\n`]*\n\s*```$/
const hasEmptyBlock = /```[^\n`]*(\n\s*```|\s*$)/
/**
 * An opener line too long for a part to hold it, a line break, one character
 * and the closing "\n```": its block cannot have content in the part it opens.
 */
const openerTooLong = (input: string, limit: number) => [...input.matchAll(/```[^\n`]*/g)].some((opener) => opener[0].length + 6 > limit)

const checkChunks = (input: string, limit: number) => {
  const chunks = chunkReply(input, limit)
  for (const chunk of chunks) {
    expect(chunk.length).toBeLessThanOrEqual(limit)
    expect(fenceCount(chunk) % 2).toBe(0)
    expect(lonePattern.test(chunk)).toBe(false)
    expect(isBlank(chunk)).toBe(false)
    if (!hasEmptyBlock.test(input) && !openerTooLong(input, limit)) expect(chunk).not.toMatch(emptyBlock)
  }
  expect(reassembles(input, chunks)).toBe(true)
  return chunks
}

const token = fc.oneof(
  { weight: 6, arbitrary: fc.stringMatching(/^[a-z]{1,12}$/) },
  { weight: 4, arbitrary: fc.constantFrom(" ", " ", "\n", "\n\n", "\t", "  ", "\r\n") },
  { weight: 2, arbitrary: fc.constantFrom("```", "```ts\n", "```python\n", "\n```\n", "`", "``", "````") },
  { weight: 2, arbitrary: fc.constantFrom("😀", "𝒳", "é", "中文", "👩‍👩‍👧") },
  { weight: 1, arbitrary: fc.integer({ min: 50, max: 900 }).map((length) => "x".repeat(length)) },
  { weight: 1, arbitrary: fc.integer({ min: 20, max: 400 }).map((length) => "😀".repeat(length)) },
  { weight: 1, arbitrary: fc.fullUnicodeString({ maxLength: 20 }) }
)
const reply = (maxTokens: number) => fc.array(token, { maxLength: maxTokens }).map((tokens) => tokens.join(""))

describe("chunkReply properties", () => {
  it("keeps every chunk within Discord's limit, fences balanced, pairs whole, text intact", () => {
    fc.assert(fc.property(reply(1200), (input) => void checkChunks(input, discordMessageLimit)), { numRuns: 150 })
  })

  it("holds for small limits, where every input needs many cuts", () => {
    fc.assert(
      fc.property(reply(200), fc.integer({ min: 64, max: 300 }), (input, limit) => void checkChunks(input, limit)),
      { numRuns: 400 }
    )
  })

  it("never sends an empty code block for a block whose first line is longer than a message", () => {
    const longFirstLine = fc.record({
      before: fc.constantFrom("", "Here is the file:\n", "intro\n\n", "a few words "),
      language: fc.constantFrom("", "python", "json"),
      // Spaceless lines too: a line with a space past its middle is cut there anyway.
      line: fc.oneof(fc.constantFrom("a", "v", "😀", "é"), fc.constantFrom("a", "v", " ", "😀", "é")).chain((char) =>
        fc.array(fc.constantFrom("a", "v", char), { minLength: 2100, maxLength: 4500 }).map((chars) => chars.join(""))
      ),
      after: fc.constantFrom("\n```", "\n```\nmore text", "\nsecond line\n```", "")
    }).map(({ after, before, language, line }) => `${before}\`\`\`${language}\n${line.trim() || "x"}${after}`)
    fc.assert(
      fc.property(longFirstLine, fc.constantFrom(discordMessageLimit, 300, 64), (input, limit) => void checkChunks(input, limit)),
      { numRuns: 200 }
    )
  })

  it("holds for arbitrary Unicode text", () => {
    fc.assert(
      fc.property(fc.fullUnicodeString({ maxLength: 6000 }), (input) => void checkChunks(input, discordMessageLimit)),
      { numRuns: 100 }
    )
  })
})

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" })
const clusters = (text: string): Array<string> => [...graphemes.segment(text)].map((part) => part.segment)

/** Clusters that only a cut through one could make: combined emoji, flags, ZWJ sequences, accents. */
const cluster = fc.constantFrom("👩‍👩‍👧", "🇫🇷", "🇩🇪", "👍🏽", "🏳️‍🌈", "e\u0301", "क्षि", "😀", "a", "b")
const unspaced = fc.array(cluster, { minLength: 1, maxLength: 400, size: "max" }).map((parts) => parts.join(""))
const word = fc.oneof(
  { weight: 8, arbitrary: fc.stringMatching(/^[a-z]{1,10}$/) },
  { weight: 1, arbitrary: fc.integer({ min: 20, max: 700 }).map((length) => "y".repeat(length)) }
)
const prose = fc.array(word, { minLength: 1, maxLength: 300, size: "max" }).map((words) => words.join(" "))

describe("chunkReply grapheme and fragment properties", () => {
  it("never splits a grapheme cluster: every cluster of every chunk is one of the reply's", () => {
    fc.assert(
      fc.property(unspaced, fc.integer({ min: 64, max: 300 }), (input, limit) => {
        const known = new Set(clusters(input))
        const chunks = checkChunks(input, limit)
        expect(chunks.join("")).toBe(input)
        for (const chunk of chunks) expect(clusters(chunk).filter((part) => !known.has(part))).toEqual([])
      }),
      { numRuns: 300 }
    )
  })

  it("never leaves a fragment under a quarter of a message when a fuller cut exists", () => {
    fc.assert(
      fc.property(prose, fc.integer({ min: 64, max: 400 }), (input, limit) => {
        const chunks = checkChunks(input, limit)
        for (const chunk of chunks.slice(0, -1)) expect(chunk.length).toBeGreaterThanOrEqual(Math.floor((limit - 4) / 4) - 1)
      }),
      { numRuns: 120 }
    )
  })
})

describe("chunkReply cases", () => {
  it("sends no lone short word before a long one", () => {
    const chunks = checkChunks(`ECHO: ${"x".repeat(2500)}`, discordMessageLimit)
    expect(chunks.length).toBe(2)
    expect(chunks[0]!.startsWith("ECHO: xxx")).toBe(true)
    expect(chunks[0]!.length).toBeGreaterThan(1900)
  })

  it("keeps ZWJ sequences and flags whole across a cut", () => {
    const family = "👩‍👩‍👧".repeat(300)
    const chunks = checkChunks(family, discordMessageLimit)
    expect(chunks.length).toBeGreaterThan(1)
    expect(chunks.every((chunk) => clusters(chunk).every((part) => part === "👩‍👩‍👧"))).toBe(true)
    const flags = `x${"🇫🇷".repeat(700)}`
    expect(checkChunks(flags, discordMessageLimit).every((chunk) => clusters(chunk.replace(/^x/, "")).every((part) => part === "🇫🇷")))
      .toBe(true)
  })

  it("sends a short reply as it is", () => {
    expect(chunkReply("Hello there.\n\nBye.")).toEqual(["Hello there.\n\nBye."])
  })

  it("sends nothing for a blank reply", () => {
    expect(chunkReply("")).toEqual([])
    expect(chunkReply(" \n\t ")).toEqual([])
  })

  it("splits a 4500-character reply with a ts block across a cut, closing and reopening the block", () => {
    const prose = "Some explanation of the change. ".repeat(40).trim()
    const code = Array.from({ length: 120 }, (_, line) => `  const value${line} = compute(${line}) // step`).join("\n")
    const input = `${prose}\n\n\`\`\`ts\n${code}\n\`\`\`\n\nThat is all.`
    expect(input.length).toBeGreaterThan(4500)
    const chunks = checkChunks(input, discordMessageLimit)
    expect(chunks.length).toBeGreaterThanOrEqual(3)
    expect(chunks[0]).toBe(prose)
    expect(chunks[1]!.startsWith("```ts\n  const value0")).toBe(true)
    expect(chunks[1]!.endsWith("\n```")).toBe(true)
    expect(chunks[2]!.startsWith("```ts\n  const value")).toBe(true)
    expect(chunks.at(-1)!.endsWith("That is all.")).toBe(true)
  })

  it("prefers a paragraph break, then a line break, then a space", () => {
    const paragraph = "word ".repeat(300).trim()
    expect(chunkReply(`${paragraph}\n\n${paragraph}`)).toEqual([paragraph, paragraph])
    const line = "word ".repeat(250).trim()
    expect(chunkReply(`${line}\n${line}`)).toEqual([line, line])
    const words = chunkReply("word ".repeat(1000).trim())
    expect(words.every((chunk) => chunk.startsWith("word") && chunk.endsWith("word"))).toBe(true)
  })

  it("cuts a long run without spaces but never between the halves of a surrogate pair", () => {
    const chunks = checkChunks("a" + "😀".repeat(2500), discordMessageLimit)
    expect(chunks.length).toBe(3)
    expect(chunks.join("")).toBe("a" + "😀".repeat(2500))
  })

  it("cuts before an opener glued to the closer before it (\"``````ts\"), never sending the closed block empty", () => {
    const x = "x".repeat(50)
    for (const content of ["😀", "ab"]) {
      expect(checkChunks(`\`\`\`python\n${content}\`\`\`\`\`\`ts\n${x}`, 64)).toEqual([`\`\`\`python\n${content}\`\`\``, `\`\`\`ts\n${x}\n\`\`\``])
    }
  })

  it("cuts inside a block's first line when it is longer than a message, never sending the block empty", () => {
    const cases = [
      ["", "python", "a".repeat(2100)],
      ["Here is the file:\n", "", "a".repeat(2500)],
      ["intro\n\n", "json", `{"k":"${"v".repeat(3000)}"}`]
    ] as const
    for (const [before, language, line] of cases) {
      const chunks = checkChunks(`${before}\`\`\`${language}\n${line}\n\`\`\``, discordMessageLimit)
      const blocks = chunks.filter((chunk) => chunk.startsWith("```"))
      expect(blocks.length).toBe(2)
      expect(blocks[0]!.startsWith(`\`\`\`${language}\n${line.slice(0, 10)}`)).toBe(true)
      expect(blocks[1]!.startsWith(`\`\`\`${language}\n`)).toBe(true)
    }
  })

  it("closes a block the reply left open", () => {
    expect(chunkReply("Here:\n```js\nconsole.log(1)")).toEqual(["Here:\n```js\nconsole.log(1)\n```"])
  })

  it("keeps the indentation of the line after a cut inside a block", () => {
    const code = Array.from({ length: 200 }, (_, line) => `    indented(${line})`).join("\n")
    const chunks = checkChunks(`\`\`\`py\n${code}\n\`\`\``, discordMessageLimit)
    expect(chunks.length).toBeGreaterThan(1)
    expect(chunks.slice(1).every((chunk) => chunk.startsWith("```py\n    indented("))).toBe(true)
  })
})
