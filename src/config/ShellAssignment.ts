/**
 * One line of config.env read the way `sh` would read an assignment, without
 * ever running anything: `export` optional, single quotes literal, double
 * quotes with `\"` `\\` `\$` `` \` `` escapes, `$VAR` and `${VAR}` (also
 * `${VAR:-default}` and `${VAR-default}`) expanded, an unquoted `~` at the
 * start of the value or after a `:` read as `$HOME`, a `#` after a space
 * starting a comment. Command substitution (`$(...)`, backticks) is refused:
 * the file is data, and a line that would run a program in a shell must not
 * silently mean something else here.
 *
 * Reasons never repeat the line: it may hold a secret.
 */
import * as Result from "effect/Result"

export interface Assignment {
  readonly key: string
  readonly value: string
}

/** A variable's value as the shell would see it at this line; undefined when unset. */
export type Lookup = (name: string) => string | undefined

const ASSIGNMENT = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)(\s*)=(\s*)/
// `export NAME` marks a variable for export in a shell: nothing to read here.
const EXPORT_ONLY = /^\s*export(?:\s+[A-Za-z_][A-Za-z0-9_]*)+\s*(?:#.*)?$/
const NAME_START = /[A-Za-z_]/
const NAME_CHAR = /[A-Za-z0-9_]/

const substitution = "command substitution ($(...) or backticks) is never run: write the value itself"

/**
 * The `~` at `text[at]` as a shell reads it in an assignment: alone (before
 * `/`, `:` or the end) it is $HOME; `~NAME` would be another user's home,
 * which is not looked up. Its expansion and where it ends, or why not.
 */
const tilde = (text: string, at: number, lookup: Lookup): Result.Result<{ readonly home: string; readonly end: number }, string> => {
  let end = at + 1
  while (end < text.length && !/[/:\s]/.test(text[end]!)) end++
  if (end > at + 1) return Result.fail("~NAME (another user's home) is not expanded here: write the path")
  const home = lookup("HOME")
  return home === undefined || home === "" ? Result.fail("~ stands for $HOME, which is not set: write the path") : Result.succeed({ home, end })
}

interface Scan {
  readonly text: string
  index: number
  value: string
}

/**
 * Reads `$…` at `scan.index` and appends what it expands to; the problem, if
 * any. `quoted`: inside double quotes, where a default's `~` stays as it is.
 */
const expand = (scan: Scan, lookup: Lookup, quoted: boolean): string | undefined => {
  const next = scan.text[scan.index + 1]
  if (next === "(") return substitution
  if (next === "{") {
    const close = scan.text.indexOf("}", scan.index + 2)
    if (close === -1) return "unterminated ${"
    const inner = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)(.*))?$/s.exec(scan.text.slice(scan.index + 2, close))
    if (inner === null) return "unsupported ${...} form: use ${NAME}, ${NAME:-default} or ${NAME-default}"
    const [, name, operator, fallback] = inner
    // A shell would expand, unquote or unescape these: read literally, the value would silently differ.
    if (fallback !== undefined && /[$`"'\\]/.test(fallback)) {
      return "the default of ${NAME:-default} must be plain text: no quotes, $, backticks or backslashes"
    }
    const found = lookup(name!)
    const useFallback = operator === ":-" ? found === undefined || found === "" : operator === "-" && found === undefined
    if (useFallback && !quoted && fallback?.startsWith("~") === true) {
      const expanded = tilde(fallback, 0, lookup)
      if (Result.isFailure(expanded)) return expanded.failure
      scan.value += expanded.success.home + fallback.slice(expanded.success.end)
    } else {
      scan.value += useFallback ? fallback ?? "" : found ?? ""
    }
    scan.index = close + 1
    return undefined
  }
  if (next !== undefined && NAME_START.test(next)) {
    let end = scan.index + 1
    while (end < scan.text.length && NAME_CHAR.test(scan.text[end]!)) end++
    scan.value += lookup(scan.text.slice(scan.index + 1, end)) ?? ""
    scan.index = end
    return undefined
  }
  // `$` before anything else (`$5`, a trailing `$`) stays as it is.
  scan.value += "$"
  scan.index++
  return undefined
}

const doubleQuoted = (scan: Scan, lookup: Lookup): string | undefined => {
  scan.index++
  while (scan.index < scan.text.length) {
    const c = scan.text[scan.index]!
    if (c === "\"") {
      scan.index++
      return undefined
    }
    if (c === "`") return substitution
    if (c === "$") {
      const problem = expand(scan, lookup, true)
      if (problem !== undefined) return problem
      continue
    }
    if (c === "\\" && /["\\$`]/.test(scan.text[scan.index + 1] ?? "")) {
      scan.value += scan.text[scan.index + 1]
      scan.index += 2
      continue
    }
    scan.value += c
    scan.index++
  }
  return "unterminated double quote (values cannot span lines)"
}

/** The value after `KEY=`: quoted and unquoted parts joined, up to a space or the end. */
const value = (text: string, lookup: Lookup): Result.Result<string, string> => {
  const scan: Scan = { text, index: 0, value: "" }
  // Where an unquoted `~` is a tilde-prefix: the start of the value, and after an unquoted `:`.
  let wordStart = true
  while (scan.index < text.length) {
    const c = text[scan.index]!
    if (wordStart && c === "~") {
      const expanded = tilde(text, scan.index, lookup)
      if (Result.isFailure(expanded)) return Result.fail(expanded.failure)
      scan.value += expanded.success.home
      scan.index = expanded.success.end
      continue
    }
    wordStart = false
    if (c === " " || c === "\t") {
      const rest = text.slice(scan.index).trimStart()
      if (rest === "" || rest.startsWith("#")) break
      return Result.fail("a space outside quotes ends the value: put the whole value in quotes")
    }
    if (c === "'") {
      const close = text.indexOf("'", scan.index + 1)
      if (close === -1) return Result.fail("unterminated single quote (values cannot span lines)")
      scan.value += text.slice(scan.index + 1, close)
      scan.index = close + 1
    } else if (c === "\"") {
      const problem = doubleQuoted(scan, lookup)
      if (problem !== undefined) return Result.fail(problem)
    } else if (c === "`") {
      return Result.fail(substitution)
    } else if (c === "$") {
      const problem = expand(scan, lookup, false)
      if (problem !== undefined) return Result.fail(problem)
    } else if (c === "\\") {
      if (scan.index + 1 >= text.length) return Result.fail("a line ending in \\ (a continuation) is not supported")
      scan.value += text[scan.index + 1]
      scan.index += 2
    } else if (c === ";" || c === "|" || c === "&" || c === "<" || c === ">") {
      return Result.fail(`"${c}" outside quotes would be a shell operator: put the value in quotes`)
    } else {
      scan.value += c
      scan.index++
      wordStart = c === ":"
    }
  }
  return Result.succeed(scan.value)
}

/**
 * The assignment on `line`, `undefined` for a blank line, a comment or a
 * bare `export NAME`, or why the line is not an assignment.
 */
export const parse = (line: string, lookup: Lookup): Result.Result<Assignment | undefined, string> => {
  if (/^\s*(#.*)?$/.test(line) || EXPORT_ONLY.test(line)) return Result.succeed(undefined)
  const match = ASSIGNMENT.exec(line)
  if (match === null) return Result.fail("expected KEY=\"value\" (optionally after export)")
  const rest = line.slice(match[0].length)
  // A shell would run `KEY =value` as the command KEY, and `KEY= value` as the command value.
  if (match[2] !== "") return Result.fail("a space before = makes this line a command in a shell, not a setting: write KEY=value")
  const spaced = match[3] !== ""
  // `KEY= # note` or `KEY=  `: the value is empty, the rest a comment.
  if (spaced && (rest === "" || rest.startsWith("#"))) return Result.succeed({ key: match[1]!, value: "" })
  if (spaced) {
    return Result.fail("a space after = ends the value in a shell (what follows would run as a command): write KEY=value, or KEY=\"value\"")
  }
  return Result.map(value(rest, lookup), (found) => ({ key: match[1]!, value: found }))
}
