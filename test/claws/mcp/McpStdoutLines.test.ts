/**
 * A stdio server's stdout as MCP reads it: JSON-RPC message lines kept
 * whole, whatever the chunks they arrive in; any other line (JSON that is
 * no JSON-RPC message included) dropped, the first one said once.
 */
import { describe, expect, it } from "@effect/vitest"
import * as McpStdoutLines from "../../../src/claws/mcp/McpStdoutLines.js"

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** `text` fed in chunks of `size` bytes; what is kept, as text. */
const keptOf = (text: string, size: number, maxLineBytes = 1024 * 1024) => {
  const lines = McpStdoutLines.make(maxLineBytes)
  const bytes = encoder.encode(text)
  const kept: Array<Uint8Array> = []
  for (let at = 0; at < bytes.length; at += size) kept.push(lines.keep(bytes.subarray(at, at + size)))
  return { kept: decoder.decode(Buffer.concat(kept)), lines }
}

describe("a stdio server's stdout lines", () => {
  it("keeps each message line whole and drops the others, however the bytes are chunked", () => {
    const output = 'Server running on stdio\n{"jsonrpc":"2.0","id":1,"result":{"text":"héllo ✓"}}\n\n' +
      '  debug: {"not":"at the start"}\n\t{"jsonrpc":"2.0","method":"notifications/progress"}\r\nbye'
    const messages = '{"jsonrpc":"2.0","id":1,"result":{"text":"héllo ✓"}}\n{"jsonrpc":"2.0","method":"notifications/progress"}\r\n'
    for (const size of [1, 2, 3, 7, 64, 4096]) expect(keptOf(output, size).kept).toBe(messages)
  })

  it("drops a JSON line that is no JSON-RPC message (a log record, an object without a message's shape), however the bytes are chunked", () => {
    const output = '{"level":"info","msg":"ready"}\n{"jsonrpc":"2.0","id":1,"result":{}}\n' +
      '{"jsonrpc":"1.0","method":"x"}\n{"jsonrpc":"2.0","level":"debug"}\n[1,2]\n{not json at all\n' +
      '{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}\n{"jsonrpc":"2.0","method":"notifications/message"}\n'
    const messages = '{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}\n' +
      '{"jsonrpc":"2.0","method":"notifications/message"}\n'
    for (const size of [1, 2, 5, 64, 4096]) {
      const { kept, lines } = keptOf(output, size)
      expect(kept).toBe(messages)
      expect(lines.firstDropped()).toBe('{"level":"info","msg":"ready"}')
      expect(lines.firstDropped()).toBeUndefined()
    }
  })

  it("passes on a message that claims JSON-RPC though it breaks the protocol: the transport refuses it, and its call is not left waiting", () => {
    const broken = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'
    expect(keptOf(broken, 7).kept).toBe(broken)
  })

  it("passes on a line held past the limit unjudged, for the transport to refuse for its size", () => {
    const long = `{"level":"info","msg":"${"x".repeat(100)}"}\n`
    for (const size of [1, 16, 4096]) expect(keptOf(`${long}{"jsonrpc":"2.0","method":"m"}\n`, size, 50).kept).toBe(`${long}{"jsonrpc":"2.0","method":"m"}\n`)
    const lines = McpStdoutLines.make(50)
    expect(lines.keep(encoder.encode(long))).toHaveLength(long.length)
  })

  it("keeps a first message line behind a UTF-8 byte order mark, without the mark", () => {
    const message = '{"jsonrpc":"2.0","id":1,"result":{}}\n'
    for (const size of [1, 2, 64]) expect(keptOf(`\ufeff${message}`, size).kept).toBe(message)
  })

  it("gives back a chunk of message lines alone as it is", () => {
    const lines = McpStdoutLines.make(1024)
    const chunk = encoder.encode('{"jsonrpc":"2.0","id":1,"result":{}}\n')
    expect(lines.keep(chunk)).toBe(chunk)
  })

  it("says the first dropped line once it is read, cut at 200 bytes, and only once", () => {
    const { lines } = keptOf(`${"x".repeat(300)}\nsecond stray line\n`, 5)
    expect(lines.firstDropped()).toBe("x".repeat(200))
    expect(lines.firstDropped()).toBeUndefined()
    const partial = McpStdoutLines.make(1024)
    partial.keep(encoder.encode("starting up"))
    expect(partial.firstDropped()).toBeUndefined()
    partial.keep(encoder.encode("...\n"))
    expect(partial.firstDropped()).toBe("starting up...")
  })

  it("says a first dropped line that starts with a character of U+F000 to U+FFFF whole, its leading mark and blanks left out", () => {
    // Such a character's first byte (0xEF) is also a byte order mark's: it must not be lost with the blanks.
    for (const size of [1, 2, 64]) {
      expect(keptOf("ｓｔａｒｔｅｄ on stdio\n", size).lines.firstDropped()).toBe("ｓｔａｒｔｅｄ on stdio")
      expect(keptOf("\ufeff  ready\n", size).lines.firstDropped()).toBe("ready")
    }
  })
})
