/**
 * What a stdio MCP server's process is given: the few variables a program
 * needs to run at all (PATH to find `node` or `npx`, HOME, the user, the
 * locale, the temporary directory: what the official MCP SDK passes by
 * default), then what its mcp.json entry names. Nothing else of the
 * agent's environment, and never one of its secrets: a secret's name or
 * value in the entry is left out too (and said, by name, in doctor's
 * report and the log).
 */
import type * as Redacted from "effect/Redacted"
import { withoutSecrets } from "../../config/Secrets.js"

export const inheritedNames: ReadonlyArray<string> = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "TERM",
  "LANG",
  "LC_ALL",
  "TMPDIR",
  "TZ"
]

/** The server's environment, and the names of its entry left out as secrets. */
export const serverEnvironment = (
  named: Readonly<Record<string, string>>,
  withheld: ReadonlyArray<Redacted.Redacted<string>>
): { readonly env: Record<string, string>; readonly left: ReadonlyArray<string> } => {
  const base: Record<string, string> = {}
  for (const name of inheritedNames) {
    const value = process.env[name]
    if (value !== undefined) base[name] = value
  }
  return withoutSecrets({ ...base, ...named }, withheld)
}
