/**
 * Lone UTF-16 surrogates: half of a character that takes two code units (an
 * emoji cut in two). Bytes never decode to one (Node reads a bad UTF-8
 * sequence as U+FFFD), but JSON can spell one (`"\ud83d"`): an HTTP body,
 * a Discord event, a model's answer, a claw bridge's catalogue, a line of
 * history.jsonl written by hand or by an older build. The Messages API
 * refuses a request holding one (400), so none may reach a brain: a user's
 * text holding one is refused (`loneSurrogateProblem`), and what the agent
 * passes on from elsewhere is repaired, each lone half replaced by U+FFFD
 * (`wellFormed`, `wellFormedJson`).
 */

/** ES2024's String methods (Node 20 and later have them; this project's lib is ES2022). */
interface WellFormedString {
  isWellFormed(): boolean
  toWellFormed(): string
}

/** No lone surrogate: a native scan, cheap enough for every text a turn sends. */
export const isWellFormed = (text: string): boolean => (text as unknown as WellFormedString).isWellFormed()

/** `text` with each lone surrogate replaced by U+FFFD; the same string when it holds none. */
export const wellFormed = (text: string): string =>
  isWellFormed(text) ? text : (text as unknown as WellFormedString).toWellFormed()

// Without the `u` flag a pattern sees code units, so it can find a half on its own.
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * Why `text` cannot be sent on, for a refusal ("holds a lone UTF-16
 * surrogate, \ud83d at character 6, …"), or undefined when it can.
 */
export const loneSurrogateProblem = (text: string): string | undefined => {
  if (isWellFormed(text)) return undefined
  const found = LONE.exec(text)
  const where = found === null ? "" : ` (\\u${found[0].charCodeAt(0).toString(16)} at character ${found.index + 1})`
  return `holds a lone UTF-16 surrogate${where}: half of a character such as an emoji, which the model's API refuses`
}

/**
 * The reply to a user's message holding a lone surrogate, or undefined for
 * one that holds none: said by the agent (Agent.decide) and by a bridge in
 * front of the interact pipe, whose UTF-8 cannot carry the half (Serve).
 */
export const loneSurrogateRefusal = (text: string): string | undefined => {
  const problem = loneSurrogateProblem(text)
  return problem === undefined
    ? undefined
    : `Your message ${problem}. Nothing was processed: please send it again with the character whole.`
}

/** Whether every string of a JSON value (keys too) is well-formed: a walk that makes nothing. */
const allWellFormed = (value: unknown): boolean => {
  if (typeof value === "string") return isWellFormed(value)
  if (typeof value !== "object" || value === null) return true
  if (Array.isArray(value)) {
    for (const item of value) if (!allWellFormed(item)) return false
    return true
  }
  for (const key in value) {
    if (Object.hasOwn(value, key) && (!isWellFormed(key) || !allWellFormed((value as Record<string, unknown>)[key]))) return false
  }
  return true
}

const repaired = (value: unknown): unknown => {
  if (typeof value === "string") return wellFormed(value)
  if (typeof value !== "object" || value === null) return value
  if (Array.isArray(value)) return value.map(repaired)
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [wellFormed(key), repaired(item)]))
}

/**
 * A JSON value with every string in it (keys too) made well-formed; the
 * same value, not a copy, when nothing needed it (the usual case, which
 * allocates nothing), so a caller keeps the objects it already has
 * (Prompt's and the frame encoder's caches).
 */
export const wellFormedJson = <A>(value: A): A => allWellFormed(value) ? value : repaired(value) as A
