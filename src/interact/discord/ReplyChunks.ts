/**
 * Splits a reply into Discord-sized messages.
 *
 * Discord rejects messages over 2000 characters. A reply is cut at the last
 * paragraph break, line break or whitespace that keeps the chunk at least
 * half full, in that order; else at the last line break; else at the last
 * whitespace that keeps it a quarter full; else at the last grapheme
 * boundary (Intl.Segmenter: a combined emoji, a flag or a letter with its
 * accents stays whole) that does not split a ``` fence marker. So a short
 * word before a long one ("ECHO: xxxx…") is never sent alone. The whitespace
 * at a cut is dropped.
 *
 * Code fences stay balanced in every chunk: a chunk that ends inside a fenced
 * block is closed with "\n```" and the next one reopens it with the same
 * language. A fence is any ``` (Discord's own rule, counted left to right
 * without overlap), so a reply whose fences are unbalanced gets its last
 * block closed too.
 */

/** Discord's limit on the content of one message. */
export const discordMessageLimit = 2000

const fence = "```"
const closingFence = "\n```"
/** Longer info strings are reopened without a language so the reopener stays small. */
const maxLanguageLength = 16
const languagePattern = /^[A-Za-z0-9_+#.-]+$/

interface FenceMarker {
  /** Index of the first backtick in the text. */
  readonly at: number
  /** For a marker that opens a block: the language after it, or "". */
  readonly language: string
}

const findFences = (text: string): ReadonlyArray<FenceMarker> => {
  const markers: Array<FenceMarker> = []
  let from = 0
  for (;;) {
    const at = text.indexOf(fence, from)
    if (at === -1) return markers
    const opens = markers.length % 2 === 0
    markers.push({ at, language: opens ? languageAfter(text, at + fence.length) : "" })
    from = at + fence.length
  }
}

/** Discord reads "```ts\n" as a block in TypeScript: the word up to the line end. */
const languageAfter = (text: string, from: number): string => {
  const lineEnd = text.indexOf("\n", from)
  if (lineEnd === -1) return ""
  const info = text.slice(from, lineEnd).trimEnd()
  return info.length <= maxLanguageLength && languagePattern.test(info) ? info : ""
}

const isWhitespace = (char: string | undefined): boolean => char !== undefined && /\s/.test(char)

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff

/**
 * Splits `text` into chunks of at most `limit` UTF-16 code units (Discord's
 * count is never higher). Whitespace-only chunks are dropped, so an empty or
 * blank reply gives no chunk at all.
 */
export const chunkReply = (text: string, limit: number = discordMessageLimit): ReadonlyArray<string> => {
  // The reopener and closer must leave room for text.
  const safeLimit = Math.max(limit, 64)
  const markers = findFences(text)

  /** The number of fence markers that end at or before `position`. */
  const markersBefore = (position: number): number => {
    let count = 0
    while (count < markers.length && markers[count]!.at + fence.length <= position) count++
    return count
  }
  const openLanguageAt = (position: number): string | undefined => {
    const count = markersBefore(position)
    return count % 2 === 1 ? markers[count - 1]!.language : undefined
  }
  /** A hard cut must not fall inside a fence marker. */
  const markerContaining = (position: number): FenceMarker | undefined =>
    markers.find((marker) => marker.at < position && position < marker.at + fence.length)

  const chunks: Array<string> = []
  const emit = (start: number, end: number) => {
    const body = text.slice(start, end).trimEnd()
    if (body.trim() === "") return
    const language = openLanguageAt(start)
    const reopen = language === undefined ? "" : `${fence}${language}\n`
    const close = openLanguageAt(end) === undefined ? "" : closingFence
    chunks.push(reopen + body + close)
  }

  let start = 0
  while (start < text.length) {
    const language = openLanguageAt(start)
    const reopenLength = language === undefined ? 0 : fence.length + language.length + 1
    const rest = text.slice(start).trimEnd()
    const restClose = openLanguageAt(text.length) === undefined ? 0 : closingFence.length
    if (reopenLength + rest.length + restClose <= safeLimit) {
      emit(start, text.length)
      break
    }
    const budget = safeLimit - reopenLength - closingFence.length
    const cut = chooseCut(text, start, start + budget, markerContaining, openLanguageAt, markers)
    emit(start, cut)
    start = afterSeparator(text, cut)
  }
  return chunks
}

/**
 * Where to end the chunk that starts at `start` and may run to `end`
 * (exclusive). Returns the index of the first character not in the chunk.
 */
const chooseCut = (
  text: string,
  start: number,
  end: number,
  markerContaining: (position: number) => FenceMarker | undefined,
  openLanguageAt: (position: number) => string | undefined,
  markers: ReadonlyArray<FenceMarker>
): number => {
  const halfway = start + Math.floor((end - start) / 2)
  const quarter = start + Math.floor((end - start) / 4)
  const cut = naturalCut(text, start, end, halfway) ?? lineCut(text, start, end) ??
    naturalCut(text, start, end, quarter) ?? hardCut(text, start, end, markerContaining)
  return avoidEmptyBlock(text, start, end, cut, openLanguageAt, markers, markerContaining)
}

/** The last paragraph, line or word boundary in (minimum, end], in that order of preference. */
const naturalCut = (text: string, start: number, end: number, minimum: number): number | undefined => {
  const paragraph = text.lastIndexOf("\n\n", end)
  if (paragraph >= minimum && paragraph > start) return paragraph
  const line = text.lastIndexOf("\n", end)
  if (line >= minimum && line > start) return line
  for (let index = Math.min(end, text.length - 1); index >= minimum && index > start; index--) {
    if (isWhitespace(text[index])) return index
  }
  return undefined
}

/** The last line break in (start, end]: a chunk of whole lines, however short. */
const lineCut = (text: string, start: number, end: number): number | undefined => {
  const line = text.lastIndexOf("\n", end)
  return line > start ? line : undefined
}

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" })

/** Longest grapheme cluster looked past `end` for (an emoji ZWJ sequence is a few dozen code units). */
const clusterLookahead = 64

/**
 * The last grapheme boundary in (start, end], segmenting from `start` (a
 * boundary: the start of the text or of a chunk). A single cluster longer
 * than the chunk has none: then the last boundary between code points.
 */
const graphemeCut = (text: string, start: number, end: number): number => {
  let last = start
  for (const { index } of graphemes.segment(text.slice(start, Math.min(text.length, end + clusterLookahead)))) {
    if (start + index > end) break
    last = start + index
  }
  if (last > start) return last
  return isHighSurrogate(text.charCodeAt(end - 1)) ? end - 1 : end
}

const hardCut = (
  text: string,
  start: number,
  end: number,
  markerContaining: (position: number) => FenceMarker | undefined
): number => {
  let cut = graphemeCut(text, start, end)
  const marker = markerContaining(cut)
  if (marker !== undefined) cut = marker.at > start ? marker.at : marker.at + fence.length
  return cut
}

/**
 * Two cuts leave an empty code block behind. Right after a fence opener, the
 * block would be empty in this chunk: cut at the line before the opener
 * instead, or, with the opener on the chunk's first line, inside the block's
 * first line (too long for one message, or it would have been kept whole).
 * Right before a closer, it would be empty in the next chunk: take the closer
 * into this chunk when it fits in the room kept for our own closer.
 */
const avoidEmptyBlock = (
  text: string,
  start: number,
  end: number,
  cut: number,
  openLanguageAt: (position: number) => string | undefined,
  markers: ReadonlyArray<FenceMarker>,
  markerContaining: (position: number) => FenceMarker | undefined
): number => {
  if (openLanguageAt(cut) === undefined) return cut
  const opener = markers.filter((marker) => marker.at < cut).at(-1)
  if (opener !== undefined && opener.at >= start) {
    const openerLineEnd = text.indexOf("\n", opener.at)
    const lineBreak = text.lastIndexOf("\n", opener.at - 1)
    const emptyBlock = openerLineEnd === -1 || openerLineEnd >= cut || text.slice(openerLineEnd, cut).trim() === ""
    // An opener glued to a closer before it on its line ("``````ts"): the cut goes just before the opener,
    // as the line break before it would leave the block that closer ends empty in this part.
    const glued = lineBreak + 1 < opener.at && text.slice(lineBreak + 1, opener.at).trim() !== "" && openLanguageAt(opener.at) === undefined
    if (emptyBlock && glued && opener.at > start) return opener.at
    if (emptyBlock && lineBreak > start) return lineBreak
    if (emptyBlock && openerLineEnd !== -1 && openerLineEnd + 1 < end) {
      const halfway = openerLineEnd + Math.floor((end - openerLineEnd) / 2)
      return naturalCut(text, openerLineEnd + 1, end, halfway) ?? hardCut(text, openerLineEnd + 1, end, markerContaining)
    }
  }
  const closer = markers.find((marker) => marker.at >= cut)
  const closerEnd = closer === undefined ? Infinity : closer.at + fence.length
  const onlyWhitespaceBefore = closer !== undefined && text.slice(cut, closer.at).trim() === ""
  return onlyWhitespaceBefore && closerEnd <= end + closingFence.length ? closerEnd : cut
}

/**
 * Where the next chunk starts: past the whitespace at the cut, but keeping the
 * indentation of the next line.
 */
const afterSeparator = (text: string, cut: number): number => {
  let next = cut
  let afterLastNewline = -1
  while (next < text.length && isWhitespace(text[next])) {
    if (text[next] === "\n") afterLastNewline = next + 1
    next++
  }
  return afterLastNewline === -1 || next === text.length ? next : afterLastNewline
}
