/**
 * Lone UTF-16 surrogates in what a brain was sent: every string of a JSON
 * value (keys too) holding half a character on its own. Found with a
 * pattern over code units, independently of the code under test.
 */

// Without the `u` flag the pattern sees code units.
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Every string of `value` (keys too) that holds a lone surrogate. */
export const loneSurrogates = (value: unknown): Array<string> => {
  if (typeof value === "string") return LONE.test(value) ? [value] : []
  if (typeof value !== "object" || value === null) return []
  if (Array.isArray(value)) return value.flatMap(loneSurrogates)
  return Object.entries(value).flatMap(([key, item]) => [...loneSurrogates(key), ...loneSurrogates(item)])
}

/** The same, in a raw JSON body as a server received it (JSON spells a lone surrogate `\udXXX`). */
export const loneSurrogatesInBody = (raw: string): Array<string> => loneSurrogates(JSON.parse(raw))

/** Half of 😀 (U+1F600), alone. */
export const HIGH = "\ud83d"
