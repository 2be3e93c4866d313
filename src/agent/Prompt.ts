/**
 * Builds the Messages API requests: a turn from soul, summary and the
 * history tail (with the agent's own memo of its last turn, promptMemo); a
 * compaction fold from the summary and older lines.
 *
 * Prompt caching (PLANCKCLAW_PROMPT_CACHE): a turn request carries three
 * `cache_control` breakpoints, on the last tool, the system prompt and the
 * last line of the older history. The API reads the longest cached prefix
 * ending at any of them, so the tools and system prompt are shared by every
 * turn until a compaction changes the summary, and the history by every
 * turn of an anchored window (CacheWindow). A compaction request has its own
 * system prompt and no breakpoint: it neither reads nor breaks the turns'.
 *
 * Every text a request carries is made well-formed here (WellFormed): a
 * lone surrogate from history, a summary, a claw's catalogue or the user's
 * text becomes U+FFFD, so no request is one the API refuses whole.
 */
import { EPHEMERAL, type Message, type MessagesRequest, type TextBlock, type ToolSpec } from "../ports/Brain.js"
import type { ToolDefinition } from "../ports/Claws.js"
import type { HistoryEntry } from "../memory/Memory.js"
import * as CompactionPrompt from "../memory/CompactionPrompt.js"
import { wellFormed, wellFormedJson } from "../runtime/WellFormed.js"

/**
 * What one history line may contribute to a request: 16 KiB of its text.
 * A longer line (a pasted log, a runaway reply) is sent cut, with a marker;
 * history.jsonl keeps it whole. Like HISTORY_KEEP, it bounds what every
 * turn costs.
 */
export const HISTORY_LINE_MAX_BYTES = 16 * 1024

/**
 * `text` cut to at most `maxBytes` bytes of UTF-8 (on a character boundary), with `…[cut: N bytes]` saying how
 * much went; well-formed either way (a lone surrogate becomes U+FFFD, as the cut's UTF-8 makes it).
 */
export const capText = (text: string, maxBytes = HISTORY_LINE_MAX_BYTES): string => {
  // Fewer UTF-16 units than maxBytes / 3 cannot exceed it: most lines skip the encoding.
  if (text.length * 3 <= maxBytes) return wellFormed(text)
  const bytes = Buffer.from(text, "utf8")
  if (bytes.length <= maxBytes) return wellFormed(text)
  let end = maxBytes
  // Back off continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return `${bytes.toString("utf8", 0, end)}…[cut: ${bytes.length - end} bytes]`
}

/**
 * The tools as the API takes them, sorted by name so their order never
 * depends on discovery; with `cache`, the last one carries the tools'
 * cache breakpoint.
 */
export const toolSpecs = (tools: ReadonlyArray<ToolDefinition>, cache = false): Array<ToolSpec> =>
  [...tools].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0).map((tool, index, sorted) => ({
    // A claw bridge's catalogue is JSON: it may spell a lone surrogate.
    name: wellFormed(tool.name),
    description: wellFormed(tool.description),
    input_schema: wellFormedJson(tool.input_schema),
    ...(cache && index === sorted.length - 1 ? { cache_control: EPHEMERAL } : {})
  }))

/**
 * `toolSpecs` remembered for the last catalogue seen: a turn reuses them
 * while every tool is the same object as before (discovery keeps an
 * unchanged claw's declaration), instead of sorting and copying the
 * catalogue each round. One per agent; the specs are never modified.
 */
export const toolSpecsMemo = (): ((tools: ReadonlyArray<ToolDefinition>, cache: boolean) => ReadonlyArray<ToolSpec>) => {
  let seen: ReadonlyArray<ToolDefinition> = []
  let seenCache = false
  let specs: ReadonlyArray<ToolSpec> = []
  const same = (tools: ReadonlyArray<ToolDefinition>) => {
    if (tools === seen) return true
    if (tools.length !== seen.length) return false
    for (let i = 0; i < tools.length; i++) if (tools[i] !== seen[i]) return false
    return true
  }
  return (tools, cache) => {
    if (cache !== seenCache || !same(tools)) {
      specs = toolSpecs(tools, cache)
      seen = tools
      seenCache = cache
    }
    return specs
  }
}

/** A turn request's parts, as the agent's memo (`promptMemo`) makes them. */
export interface TurnRequestOptions {
  readonly model: string
  readonly maxTokens: number
  readonly system: string
  readonly messages: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<ToolDefinition>
  /** Prompt-caching breakpoints on the last tool and the system prompt (the history's is `conversation`'s). */
  readonly cache?: boolean
  /** `tools` as `toolSpecs(tools, cache)` makes them, when the caller has them already (the memo's `toolSpecs`). */
  readonly specs?: ReadonlyArray<ToolSpec>
}

/**
 * What one agent's turns build their requests with, remembering what the
 * last turn made: every turn sends mostly the same system prompt, history
 * lines and tools as the one before. One per agent (made with it, dropped
 * with it), so agents of one process (serve) never share or evict each
 * other's; the texts and messages it hands out are never modified.
 */
export interface PromptMemo {
  /**
   * The system prompt: the soul, then the summary when there is one. The
   * last one made is given again for the same two texts, so a turn neither
   * joins them anew (soul and summary together can be kilobytes) nor makes
   * the frame encoder compare a new string with the text it kept, character
   * by character.
   */
  readonly systemPrompt: (soul: string, summary: string) => string
  /**
   * History tail plus the new message, starting with a user turn as the API
   * requires. With `cache`, the last history line carries the older
   * history's cache breakpoint (as a text block: only a block can carry one).
   */
  readonly conversation: (history: ReadonlyArray<HistoryEntry>, text: string, cache?: boolean) => Array<Message>
  /** `toolSpecs` of the last catalogue seen (see toolSpecsMemo). */
  readonly toolSpecs: (tools: ReadonlyArray<ToolDefinition>, cache: boolean) => ReadonlyArray<ToolSpec>
  readonly turnRequest: (options: TurnRequestOptions) => MessagesRequest
}

/**
 * The lines of the last window and their messages: the next window is
 * mostly the same entries shifted, which are found by position without a
 * lookup each (checked entry by entry, so any window is right).
 */
interface KeptLines {
  entries: ReadonlyArray<HistoryEntry>
  messages: ReadonlyArray<Message>
}

export const promptMemo = (): PromptMemo => {
  let lastPrompt: { readonly soul: string; readonly summary: string; readonly text: string } | undefined
  const systemPrompt = (soul: string, summary: string): string => {
    const last = lastPrompt
    if (last !== undefined && last.soul === soul && last.summary === summary) return last.text
    const text = wellFormed(summary.length === 0 ? soul : `${soul}\n---\nCONVERSATION SUMMARY:\n${summary}`)
    lastPrompt = { soul, summary, text }
    return text
  }

  /*
   * A history line as a message, made once per line: memory hands out the
   * same entry objects turn after turn (its tail cache), and a turn sends up
   * to 2 × HISTORY_KEEP of them, so remaking them all was a good part of a
   * turn's own cost. Entries are never modified; a message is never modified either.
   */
  const plainLines = new WeakMap<HistoryEntry, Message>()
  const blockLines = new WeakMap<HistoryEntry, Message>()
  const lastPlainLines: KeptLines = { entries: [], messages: [] }
  const lastBlockLines: KeptLines = { entries: [], messages: [] }
  const lineMessage = (entry: HistoryEntry, cache: boolean): Message => {
    const made = cache ? blockLines : plainLines
    let message = made.get(entry)
    if (message === undefined) {
      const content = capText(entry.content)
      message = cache ? { role: entry.role, content: [{ type: "text", text: content }] } : { role: entry.role, content }
      made.set(entry, message)
    }
    return message
  }
  const conversation = (history: ReadonlyArray<HistoryEntry>, text: string, cache = false): Array<Message> => {
    const start = history[0]?.role === "assistant" ? 1 : 0
    const last = history.length - 1
    const messages: Array<Message> = []
    const kept = cache ? lastBlockLines : lastPlainLines
    // Where this window's first line was in the last one: a window slides or grows from turn to turn.
    const shift = start < last ? kept.entries.indexOf(history[start]!) - start : 0
    for (let i = start; i < last; i++) {
      const entry = history[i]!
      const at = i + shift
      messages.push(shift >= -start && kept.entries[at] === entry ? kept.messages[at]! : lineMessage(entry, cache))
    }
    kept.entries = history.slice(start, last)
    kept.messages = messages.slice()
    if (start <= last) {
      const entry = history[last]!
      // With caching, every history line is a text block, whether it carries the breakpoint or not:
      // next turn the same line, without it, is the same bytes up to where the breakpoint was.
      messages.push(
        !cache ? lineMessage(entry, false) : {
          role: entry.role,
          content: [{ type: "text", text: capText(entry.content), cache_control: EPHEMERAL }]
        }
      )
    }
    messages.push({ role: "user", content: wellFormed(text) })
    return messages
  }

  /*
   * The system prompt as a block with its cache breakpoint, remade only when
   * the text changes: every request (each round of each turn) then holds the
   * same object, whose JSON the frame encoder keeps (a soul can be kilobytes).
   * Compared by value, so an edited soul or a new summary is a new block.
   */
  let lastSystem: { readonly text: string; readonly blocks: ReadonlyArray<TextBlock> } | undefined
  const systemBlocks = (text: string): ReadonlyArray<TextBlock> => {
    if (lastSystem === undefined || lastSystem.text !== text) {
      lastSystem = { text, blocks: [{ type: "text", text, cache_control: EPHEMERAL }] }
    }
    return lastSystem.blocks
  }
  const turnRequest = (options: TurnRequestOptions): MessagesRequest => ({
    // In MessagesRequest's field order: tools, system, messages.
    model: options.model,
    max_tokens: options.maxTokens,
    ...(options.tools.length > 0 ? { tools: options.specs ?? toolSpecs(options.tools, options.cache === true) } : {}),
    system: options.cache === true ? systemBlocks(options.system) : options.system,
    messages: options.messages
  })

  return { systemPrompt, conversation, toolSpecs: toolSpecsMemo(), turnRequest }
}

// The compaction instruction lives beside the stores, where the usage ledger also reads it.
export { COMPACTION_SYSTEM } from "../memory/CompactionPrompt.js"

export const COMPACTION_MAX_TOKENS = 2048

export const compactionRequest = (model: string, summary: string, lines: ReadonlyArray<string>): MessagesRequest => ({
  model,
  max_tokens: COMPACTION_MAX_TOKENS,
  system: CompactionPrompt.COMPACTION_SYSTEM,
  messages: [{
    role: "user",
    // The summary may be the last chunk's answer, not yet read back from summary.md.
    content: wellFormed(`EXISTING SUMMARY:\n${summary}\n\nCONVERSATION TO SUMMARIZE:\n${lines.join("\n")}`)
  }]
})
