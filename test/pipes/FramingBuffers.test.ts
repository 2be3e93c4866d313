/**
 * The framers keep what they buffer of a line split across chunks as their
 * own copy: a caller may reuse its buffer once `push` returns, and a Node
 * Buffer's `slice` (unlike a Uint8Array's) would only be a view of it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { makeBlockFramer, makeLineFramer } from "../../src/runtime/Framing.js"

const rights = (frames: ReadonlyArray<Result.Result<string, unknown>>) => frames.filter(Result.isSuccess).map((f) => f.success)

describe("Framing with a reused Buffer", () => {
  it("a line split across two pushes of the same Buffer comes out as sent", () => {
    const framer = makeLineFramer(100)
    const buffer = Buffer.alloc(6)
    buffer.write("hello ")
    expect(framer.push(buffer)).toEqual([])
    buffer.write("world\n")
    expect(rights(framer.push(buffer))).toEqual(["hello world"])
  })

  it("a block split across two pushes of the same Buffer comes out as sent", () => {
    const framer = makeBlockFramer(100)
    const buffer = Buffer.alloc(5)
    buffer.write("{\"a\":")
    expect(framer.push(buffer)).toEqual([])
    buffer.write("1}\n\n ")
    expect(rights(framer.push(buffer))).toEqual(["{\"a\":1}"])
  })
})
