/**
 * Reading the history ledger (.history-ledger.json): a whole ledger, then
 * appended records, replayed as `Ledger.record` would one by one; torn and
 * foreign lines skipped.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Ledger from "../../src/memory/Ledger.js"

/** The ledger the lines stand for, one `record` per record line. */
const replayed = (start: Ledger.Ledger, records: ReadonlyArray<readonly [number, string, number, number]>) =>
  records.reduce((ledger, [inode, key, from, to]) => Ledger.record(ledger, inode, key, from, to), start)

describe("Ledger.parse", () => {
  it("replays a whole ledger and its records, keeping the last KEEP exchanges", () => {
    const whole: Ledger.Ledger = {
      inode: 7,
      exchanges: [{ key: "old", start: 0, end: 0, folded: true }, { key: "k1", start: 0, end: 10 }]
    }
    const records: Array<readonly [number, string, number, number]> = []
    for (let i = 0; i < 2 * Ledger.KEEP + 30; i++) records.push([7, `k${i % (Ledger.KEEP + 40)}`, i * 10, i * 10 + 10])
    records.push([7, "k1", 5000, 5010]) // named again: moves to the end
    const text = Ledger.encode(whole) + records.map((r) => Ledger.encodeRecord(...r)).join("")
    const parsed = Ledger.parse(text)
    expect(parsed).toEqual(replayed(whole, records))
    expect(parsed.exchanges).toHaveLength(Ledger.KEEP)
    expect(parsed.exchanges.at(-1)).toEqual({ key: "k1", start: 5000, end: 5010 })
  })

  it("starts over for another history file, and a later whole ledger replaces everything before it", () => {
    const text = Ledger.encodeRecord(1, "a", 0, 5) + Ledger.encodeRecord(2, "b", 0, 5) + Ledger.encodeRecord(2, "c", 5, 9)
    expect(Ledger.parse(text)).toEqual({ inode: 2, exchanges: [{ key: "b", start: 0, end: 5 }, { key: "c", start: 5, end: 9 }] })
    const later = text + Ledger.encode({ inode: 3, exchanges: [{ key: "z", start: 0, end: 1 }] })
    expect(Ledger.parse(later)).toEqual({ inode: 3, exchanges: [{ key: "z", start: 0, end: 1 }] })
  })

  it("skips a torn last line, foreign lines and malformed records", () => {
    const good = Ledger.encodeRecord(4, "a", 0, 5)
    const text = [
      "not json",
      `{"inode":4,"key":"x","start":"0","end":5}`,
      `{"inode":4,"key":5,"start":0,"end":5}`,
      `[1,2]`,
      `null`,
      good.trimEnd(),
      Ledger.encodeRecord(4, "b", 5, 9).slice(0, 12)
    ].join("\n")
    expect(Ledger.parse(text)).toEqual({ inode: 4, exchanges: [{ key: "a", start: 0, end: 5 }] })
  })

  it("is empty for no file, an empty file, or nothing readable", () => {
    expect(Ledger.parse(undefined)).toEqual(Ledger.empty)
    expect(Ledger.parse("")).toEqual(Ledger.empty)
    expect(Ledger.parse("garbage\n{\n")).toEqual(Ledger.empty)
  })

  it("recording in place keeps what `record` keeps", () => {
    // A whole ledger may name a key twice: dropping one copy must not forget the other.
    let ledger: Ledger.Ledger = { inode: 9, exchanges: [{ key: "twice", start: 0, end: 0 }, { key: "twice", start: 0, end: 1 }] }
    const owned = Ledger.own(ledger.exchanges)
    expect(owned.keys.has("twice")).toBe(true)
    for (let i = 0; i < Ledger.KEEP + 20; i++) {
      ledger = { inode: 9, exchanges: [...ledger.exchanges, { key: `k${i}`, start: i, end: i + 1 }].slice(-Ledger.KEEP) }
      Ledger.recordNewInPlace(owned, `k${i}`, i, i + 1)
      if (i === Ledger.KEEP - 2) expect(owned.keys.has("twice")).toBe(true)
      if (i === Ledger.KEEP - 1) expect(owned.keys.has("twice")).toBe(false)
    }
    expect(owned.exchanges).toEqual(ledger.exchanges)
    expect([...owned.keys.keys()].sort()).toEqual(ledger.exchanges.map((entry) => entry.key).sort())
    expect(owned.keys.has("k0")).toBe(false)
  })
})

describe("Ledger.parse of a whole ledger, checked by hand as its Schema would decode it", () => {
  it("keeps a whole ledger with other keys (dropped), and skips one with any malformed entry", () => {
    const record = Ledger.encodeRecord(9, "r", 0, 3)
    const withExtras = `{"inode":9,"v":2,"exchanges":[{"key":"a","start":0,"end":1,"note":"x"},{"key":"b","start":0,"end":0,"folded":true}]}\n`
    expect(Ledger.parse(withExtras)).toEqual({
      inode: 9,
      exchanges: [{ key: "a", start: 0, end: 1 }, { key: "b", start: 0, end: 0, folded: true }]
    })
    for (
      const malformed of [
        `{"inode":9,"exchanges":[{"key":"a","start":0}]}`,
        `{"inode":9,"exchanges":[{"key":"a","start":0,"end":1,"folded":"yes"}]}`,
        `{"inode":"9","exchanges":[]}`,
        `{"inode":9,"exchanges":{"key":"a"}}`,
        `{"inode":9,"exchanges":[null]}`
      ]
    ) {
      // Skipped like a foreign line: the record before it stands.
      expect(Ledger.parse(record + malformed + "\n")).toEqual({ inode: 9, exchanges: [{ key: "r", start: 0, end: 3 }] })
    }
  })
})
