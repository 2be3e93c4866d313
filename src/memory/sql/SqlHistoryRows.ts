/**
 * History lines as rows, and back, exactly: a row holds the entry (role,
 * content) and, only when the line is not what the entry encodes to, the
 * line itself (`line`), so `planckclaw memory export` writes every line as
 * the file had it. A text column cannot hold a NUL character: an entry
 * whose content has one is kept as its JSON line (which escapes it).
 */
import * as Option from "effect/Option"
import { encodeEntry, type HistoryEntry, parseLine } from "../HistoryFile.js"
import { holdsNul } from "./SqlExactText.js"

export interface HistoryRow {
  readonly role: string | null
  readonly content: string | null
  readonly line: string | null
}

/** The row for an entry this program appends. */
export const rowOfEntry = (entry: HistoryEntry): HistoryRow =>
  holdsNul(entry.content)
    ? { role: entry.role, content: null, line: encodeEntry(entry) }
    : { role: entry.role, content: entry.content, line: null }

/** The row for a line of a history.jsonl, whatever it holds; none when even the line cannot be stored (a NUL). */
export const rowOfLine = (raw: string): Option.Option<HistoryRow> => {
  if (holdsNul(raw)) return Option.none()
  const entry = parseLine(raw)
  if (Option.isSome(entry) && encodeEntry(entry.value) === raw && !holdsNul(entry.value.content)) {
    return Option.some({ role: entry.value.role, content: entry.value.content, line: null })
  }
  return Option.some(
    Option.match(entry, {
      onNone: () => ({ role: null, content: null, line: raw }),
      onSome: (value) => ({ role: value.role, content: holdsNul(value.content) ? null : value.content, line: raw })
    })
  )
}

/** The line as history.jsonl holds it (without its newline). */
export const lineOfRow = (row: HistoryRow): string =>
  row.line ?? encodeEntry({ role: row.role === "assistant" ? "assistant" : "user", content: row.content ?? "" })

/** The entry, or none for a line that is not {"role","content"} (skipped by readers, as in the file). */
export const entryOfRow = (row: HistoryRow): Option.Option<HistoryEntry> =>
  row.line !== null
    ? parseLine(row.line)
    : (row.role === "user" || row.role === "assistant") && row.content !== null
    ? Option.some({ role: row.role, content: row.content })
    : Option.none()
