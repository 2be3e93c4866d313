/**
 * Builds the Messages API requests: a turn from soul, summary and the
 * history tail; a compaction fold from the summary and older lines.
 */
import type { Message, MessagesRequest, ToolSpec } from "./Brain.js"
import type { ToolDefinition } from "./Claws.js"
import type { HistoryEntry } from "./memory/Memory.js"

export const systemPrompt = (soul: string, summary: string): string =>
  summary.length > 0 ? `${soul}\n---\nCONVERSATION SUMMARY:\n${summary}` : soul

/**
 * What one history line may contribute to a request: 16 KiB of its text.
 * A longer line (a pasted log, a runaway reply) is sent cut, with a marker;
 * history.jsonl keeps it whole. Like HISTORY_KEEP, it bounds what every
 * turn costs.
 */
export const HISTORY_LINE_MAX_BYTES = 16 * 1024

/** `text` cut to at most `maxBytes` bytes of UTF-8 (on a character boundary), with `…[cut: N bytes]` saying how much went. */
export const capText = (text: string, maxBytes = HISTORY_LINE_MAX_BYTES): string => {
  // Fewer UTF-16 units than maxBytes / 3 cannot exceed it: most lines skip the encoding.
  if (text.length * 3 <= maxBytes) return text
  const bytes = Buffer.from(text, "utf8")
  if (bytes.length <= maxBytes) return text
  let end = maxBytes
  // Back off continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return `${bytes.toString("utf8", 0, end)}…[cut: ${bytes.length - end} bytes]`
}

/** History tail plus the new message, starting with a user turn as the API requires. */
export const conversation = (history: ReadonlyArray<HistoryEntry>, text: string): Array<Message> => {
  const start = history[0]?.role === "assistant" ? 1 : 0
  return [
    ...history.slice(start).map((entry): Message => ({ role: entry.role, content: capText(entry.content) })),
    { role: "user", content: text }
  ]
}

export const toolSpecs = (tools: ReadonlyArray<ToolDefinition>): Array<ToolSpec> =>
  tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.input_schema }))

export const turnRequest = (options: {
  readonly model: string
  readonly maxTokens: number
  readonly system: string
  readonly messages: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<ToolDefinition>
}): MessagesRequest => ({
  model: options.model,
  max_tokens: options.maxTokens,
  system: options.system,
  messages: options.messages,
  ...(options.tools.length > 0 ? { tools: toolSpecs(options.tools) } : {})
})

/** The original PlanckClaw's compaction instruction, kept word for word. */
export const COMPACTION_SYSTEM =
  "You are a memory compaction assistant. Summarize the following conversation, preserving: key facts about the user, their preferences, decisions made, ongoing projects, and important context. Be concise but complete. Output only the summary, no preamble."

export const COMPACTION_MAX_TOKENS = 2048

export const compactionRequest = (model: string, summary: string, lines: ReadonlyArray<string>): MessagesRequest => ({
  model,
  max_tokens: COMPACTION_MAX_TOKENS,
  system: COMPACTION_SYSTEM,
  messages: [{
    role: "user",
    content: `EXISTING SUMMARY:\n${summary}\n\nCONVERSATION TO SUMMARIZE:\n${lines.join("\n")}`
  }]
})
