/**
 * A file name or path as shown in a log line or a listing: control
 * characters escaped as JSON escapes them (`\n`, `\u001b`), so that a claw
 * named `x<newline>planckclaw error: …` cannot forge a line of the log or
 * of `planckclaw tools`, nor send a terminal sequence. C1 controls, DEL and
 * the Unicode line and paragraph separators too; the backslash is doubled
 * so that an escape cannot be mistaken for a name's own text.
 */

// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\\]/g

const SHORT: Readonly<Record<string, string>> = { "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", "\\": "\\\\" }

const escape = (char: string): string => SHORT[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`

export const printable = (text: string): string => text.replace(UNPRINTABLE, escape)
