/**
 * How the console reads a turn's `end`: whether the turn was cancelled, and
 * what of the reply its streamed text had not shown yet. No DOM here, so
 * test/console/TurnEnd.test.ts checks it in node.
 */
import type { End } from "../../src/hosts/serve/WireShapes.js"

/**
 * Whether `end` answers a cancelled turn: the server says so in `cancelled`.
 * Never read from the reply: a model may write the cancellation's very words.
 */
export const isCancelled = (end: End): boolean => end.cancelled

/**
 * What `reply` says beyond the text already `told` by the stream (the whole
 * reply when nothing was told), or undefined when the reply does not go on
 * from that text (the brain failed after some of it: the reply is another
 * text). Whitespace is not compared: the reply joins each round's text
 * trimmed, with a blank line between.
 */
export const beyondTold = (reply: string, told: string): string | undefined => {
  const wanted = told.replace(/\s+/gu, "")
  let matched = 0
  let index = 0
  for (; index < reply.length && matched < wanted.length; index++) {
    const char = reply[index]!
    if (/\s/u.test(char)) continue
    if (char !== wanted[matched]) return undefined
    matched++
  }
  return matched < wanted.length ? undefined : reply.slice(index).trim()
}
