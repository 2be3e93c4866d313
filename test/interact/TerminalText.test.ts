import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { stripControlSequences } from "../../src/interact/TerminalText.js"

// Everything a terminal may act on rather than print: C0 and C1 except tab and newline, and DEL.
// eslint-disable-next-line no-control-regex
const ACTIVE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/
const hasActive = (text: string) => ACTIVE.test(text.replace(/[\n\t]/g, ""))

const ESC = "\u001b"
const BEL = "\u0007"
const ST = `${ESC}\\`

/** Printable text: graphemes (emoji, combining marks, wide scripts), spaces, tabs and newlines. */
const printable = fc.string({
  unit: fc.oneof(
    { weight: 6, arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 }) },
    { weight: 2, arbitrary: fc.constantFrom(" ", "\t", "\n", "a", "[", "]", "\\", "P", "J", "m", "0", ";") },
    { weight: 2, arbitrary: fc.constantFrom("😀", "👩‍👩‍👧", "🇫🇷", "é", "é", "ñ̃", "ก้", "中文", "𝒳", "Z̤͔ͧ̑") }
  ),
  maxLength: 40
})

const csiParameters = fc.stringMatching(/^[0-?]{0,8}$/)
const csiIntermediates = fc.stringMatching(/^[ -/]{0,2}$/)
const csiFinal = fc.integer({ min: 0x40, max: 0x7e }).map((code) => String.fromCharCode(code))
// String payloads are printable, without the bytes that end a string sequence.
const payload = printable.map((text) => text.replace(/[\u0007\u0018\u001a\u001b\u009c]/g, ""))

/** One well-formed control sequence or control character, in 7-bit or 8-bit form. */
const controlSequence = fc.oneof(
  fc.tuple(fc.constantFrom(`${ESC}[`, "\u009b"), csiParameters, csiIntermediates, csiFinal).map((parts) =>
    parts.join("")
  ),
  fc.tuple(fc.constantFrom(`${ESC}]`, "\u009d"), payload, fc.constantFrom(BEL, ST, "\u009c")).map((parts) =>
    parts.join("")
  ),
  fc.tuple(
    fc.constantFrom(`${ESC}P`, `${ESC}X`, `${ESC}^`, `${ESC}_`, "\u0090", "\u0098", "\u009e", "\u009f"),
    payload,
    fc.constantFrom(ST, "\u009c")
  ).map((parts) => parts.join("")),
  fc.tuple(
    fc.stringMatching(/^[ -/]{0,2}$/),
    fc.integer({ min: 0x30, max: 0x7e }).filter((code) => !"[]PX^_".includes(String.fromCharCode(code)))
  ).map(([intermediates, final]) => `${ESC}${intermediates}${String.fromCharCode(final)}`),
  fc.integer({ min: 0, max: 0x9f })
    .filter((code) => (code < 0x20 || code >= 0x7f) && code !== 0x0a && code !== 0x09 && code !== 0x1b)
    .filter((code) => ![0x90, 0x98, 0x9b, 0x9d, 0x9e, 0x9f].includes(code))
    .map((code) => String.fromCharCode(code))
)

/** Hostile text: anything at all, with a good share of escapes and controls. */
const hostile = fc.string({
  unit: fc.oneof(
    { weight: 3, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
    { weight: 3, arbitrary: fc.string({ unit: "binary-ascii", minLength: 1, maxLength: 1 }) },
    { weight: 2, arbitrary: fc.constantFrom(ESC, `${ESC}[`, `${ESC}]`, `${ESC}P`, "\u009b", "\u009d", BEL, ST, "\r") },
    { weight: 2, arbitrary: controlSequence }
  ),
  maxLength: 60
})

describe("stripControlSequences", () => {
  it.each([
    ["a window title", `before${ESC}]0;pwned${BEL}after`, "beforeafter"],
    ["a window title ended by ST", `before${ESC}]2;pwned${ST}after`, "beforeafter"],
    ["a hyperlink, keeping its text", `${ESC}]8;;https://x.test${ST}link${ESC}]8;;${ST}`, "link"],
    ["a screen clear", `${ESC}[2J${ESC}[Hhello`, "hello"],
    ["colours", `${ESC}[38;5;196mred${ESC}[0m plain`, "red plain"],
    ["a private mode switch", `${ESC}[?1049hx${ESC}[?1049l`, "x"],
    ["an 8-bit CSI", "\u009b2Jx", "x"],
    ["an 8-bit OSC ended by 8-bit ST", "\u009d0;t\u009cx", "x"],
    ["a DCS query", `${ESC}P$qm${ST}x`, "x"],
    ["an APC", `${ESC}_payload${ST}x`, "x"],
    ["a charset switch (two characters after ESC)", `${ESC}(0lqk${ESC}(B`, "lqk"],
    ["the screen alignment test", `${ESC}#8x`, "x"],
    ["a full reset", `${ESC}cx`, "x"],
    ["a lone CR that would overwrite the line", "safe text\rEVIL", "safe textEVIL"],
    ["CR LF", "one\r\ntwo\r\n", "one\ntwo\n"],
    ["backspaces and a bell", "ab\b\bc\u0007", "abc"],
    ["DEL and NEL", "a\u007fb\u0085c", "abc"],
    ["a CSI cut by a newline", `${ESC}[1\n2J`, "\n2J"],
    ["a CSI left open at the end", `text${ESC}[12;`, "text"],
    ["an OSC left open at the end", `text${ESC}]0;title never ended`, "text"],
    ["an OSC cancelled by CAN", `a${ESC}]0;t\u0018b`, "ab"],
    ["a lone ESC at the end", `text${ESC}`, "text"],
    ["ESC before a non-ASCII letter", `${ESC}é`, "é"],
    ["tabs and newlines", "col1\tcol2\nrow2\t\n", "col1\tcol2\nrow2\t\n"],
    ["emoji and combining marks", "👩‍👩‍👧 🇫🇷 é ñ̃ 中文 𝒳", "👩‍👩‍👧 🇫🇷 é ñ̃ 中文 𝒳"]
  ])("removes %s", (_name, input, expected) => {
    expect(stripControlSequences(input)).toBe(expected)
  })

  it("leaves nothing a terminal would act on, except newline and tab", () => {
    fc.assert(
      fc.property(hostile, (text) => {
        expect(hasActive(stripControlSequences(text))).toBe(false)
      }),
      { numRuns: 2000 }
    )
  })

  it("passes printable text unchanged, emoji and combining marks included", () => {
    fc.assert(
      fc.property(printable, (text) => {
        expect(stripControlSequences(text)).toBe(text)
      }),
      { numRuns: 2000 }
    )
  })

  it("removes a whole control sequence and nothing around it", () => {
    fc.assert(
      fc.property(printable, controlSequence, printable, (before, sequence, after) => {
        expect(stripControlSequences(`${before}${sequence}${after}`)).toBe(`${before}${after}`)
      }),
      { numRuns: 2000 }
    )
  })

  it("is idempotent", () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const once = stripControlSequences(text)
        expect(stripControlSequences(once)).toBe(once)
      }),
      { numRuns: 1000 }
    )
  })

  it("returns a long plain reply as it is", () => {
    const reply = "word ".repeat(200_000)
    expect(stripControlSequences(reply)).toBe(reply)
  })
})
