import { describe, expect, it } from "@effect/vitest"
import { madeOnFirstCall } from "../../src/runtime/FirstCall.js"

describe("madeOnFirstCall", () => {
  it("makes the function at its first call, once, and answers as the made function does", () => {
    let made = 0
    const double = madeOnFirstCall(() => {
      made++
      return (n: number) => n * 2
    })
    expect(made).toBe(0)
    expect([double(1), double(2), double(3)]).toEqual([2, 4, 6])
    expect(made).toBe(1)
  })
})
