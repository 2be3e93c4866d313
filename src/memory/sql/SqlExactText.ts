/**
 * A text kept exactly in a PostgreSQL `text` column, which cannot hold a NUL
 * character (a model can answer one, a user can send one). Such a text is
 * kept twice: in its own column with each NUL as U+FFFD (what a reader of
 * an earlier version, which knows only that column, gets), and as its JSON
 * string (which escapes the NUL) in a `…_json` column beside it, NULL for
 * every other text. The cluster's decided replies are kept the same way
 * (hosts/cluster/DecidedRows.ts).
 *
 * The JSON is believed only while the plain column still holds what was
 * written with it: a writer of an earlier version that changes the plain
 * column alone (a compaction of the summary) leaves a JSON that no longer
 * matches, and the plain column is what it wrote.
 */
import * as Result from "effect/Result"

const NUL = "\u0000"

export const holdsNul = (text: string): boolean => text.includes(NUL)

/** `text` as a text column can hold it: each NUL as U+FFFD. */
export const storable = (text: string): string => holdsNul(text) ? text.replaceAll(NUL, "\uFFFD") : text

/** The `…_json` column for `text`: its JSON string when it holds a NUL, else NULL. */
export const jsonOf = (text: string | null | undefined): string | null =>
  text !== null && text !== undefined && holdsNul(text) ? JSON.stringify(text) : null

/** The text the two columns hold: the JSON's when there is one that matches the plain column, else the plain column. */
export const textOf = <Plain extends string | null>(plain: Plain, json: string | null | undefined): Plain | string => {
  if (plain === null || json === null || json === undefined) return plain
  const parsed = Result.try(() => JSON.parse(json) as unknown)
  return Result.isSuccess(parsed) && typeof parsed.success === "string" && storable(parsed.success) === plain
    ? parsed.success
    : plain
}

/**
 * The UTF-8 bytes of the text the two columns hold, from the plain column's
 * size as the server counted it (`plainBytes`) and, beside a JSON, the plain
 * text itself (a query reads it only then: most rows bring no text). A NUL
 * is 1 byte where the plain column's U+FFFD is 3.
 */
export const exactBytes = (plainBytes: number | null, plain: string | null, json: string | null | undefined): number => {
  if (plain === null || json === null || json === undefined) return Number(plainBytes ?? 0)
  return Buffer.byteLength(textOf(plain, json), "utf8")
}
