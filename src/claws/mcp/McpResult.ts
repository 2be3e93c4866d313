/**
 * What an MCP tool answered, as the claws answer: text, cut at the claws'
 * output cap (the cut marked), never empty and never ending in whitespace
 * (a result must not end in the empty line that frames answers on the claw
 * FIFO). Content other than text is described in a line, not sent whole: an
 * image or audio clip as its type and size, a resource as its text or URI.
 */
import type * as McpSchema from "effect/ai/McpSchema"
import type { ToolResult } from "../../ports/Claws.js"

const encoder = new TextEncoder()
const decoder = new TextDecoder("utf-8", { fatal: false })

/** `text` cut to at most `max` UTF-8 bytes on a character boundary, and whether it was cut. */
export const capBytes = (text: string, max: number): { readonly text: string; readonly cut: boolean } => {
  const bytes = encoder.encode(text)
  if (bytes.length <= max) return { text, cut: false }
  let end = max
  // Back to the lead byte of a character cut in the middle.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--
  return { text: decoder.decode(bytes.subarray(0, end)), cut: true }
}

const describeBlock = (block: McpSchema.ContentBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "image":
      return `[image ${block.mimeType}, ${block.data.byteLength} bytes]`
    case "audio":
      return `[audio ${block.mimeType}, ${block.data.byteLength} bytes]`
    case "resource":
      return "text" in block.resource
        ? block.resource.text
        : `[resource ${block.resource.uri}${block.resource.mimeType === undefined ? "" : ` (${block.resource.mimeType})`}]`
    case "resource_link":
      return `[resource link ${block.uri}${block.name === "" ? "" : ` ${block.name}`}]`
  }
}

/** A tool's result as a claw's: its content blocks in order, one per line; structured content when it has no text. */
export const toToolResult = (result: McpSchema.CallToolResult, outputMax: number): ToolResult => {
  const parts = result.content.map(describeBlock).filter((part) => part !== "")
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent))
  const { cut, text } = capBytes(parts.join("\n").trimEnd(), outputMax)
  const content = `${text.trimEnd()}${cut ? `\n[output truncated at ${outputMax} bytes]` : ""}`
  return { content: content === "" ? "(no output)" : content, isError: result.isError === true }
}
