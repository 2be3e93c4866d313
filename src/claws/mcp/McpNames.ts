/**
 * The names MCP tools go by: `mcp__SERVER__TOOL`, so none can collide with a
 * claw's (a claw may not declare a name that starts `mcp__`, see
 * ClawsWithMcp) nor with another server's (a server's name holds no `__`
 * and does not end in `_`, so the first `__` after the prefix ends it).
 * Apart from McpClaws so that what only names them (the agent's claws
 * without servers, `tools`) does not load the MCP client.
 */
import { printable } from "../../runtime/Printable.js"
import type { ServerEntry } from "./McpConfig.js"

export const toolPrefix = "mcp__"

export const toolName = (server: string, tool: string): string => `${toolPrefix}${server}__${tool}`

/** The server and the tool a full name stands for; undefined when it is no MCP tool's name. */
export const parseToolName = (name: string): { readonly server: string; readonly tool: string } | undefined => {
  if (!name.startsWith(toolPrefix)) return undefined
  const rest = name.slice(toolPrefix.length)
  const split = rest.indexOf("__")
  return split <= 0 ? undefined : { server: rest.slice(0, split), tool: rest.slice(split + 2) }
}

/**
 * A server's URL as shown: without a user and password in it, its query and
 * fragment as `?…` (either may carry a token, `?api_key=…`); headers are the
 * place for one, and they are never shown.
 */
const shownUrl = (url: string): string => {
  if (!URL.canParse(url)) return "(a URL that does not parse)"
  const parsed = new URL(url)
  const hidden = parsed.search !== "" || parsed.hash !== ""
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}${hidden ? "?…" : ""}`
}

/**
 * Text about a server (an error from its client, which quotes the URL whole)
 * with its URL's user, password, query and fragment left out: such words go
 * to logs, to `doctor` and to the model as a tool's failure.
 */
export const hidingUrlSecrets = (entry: ServerEntry): (text: string) => string => {
  if (entry._tag === "Stdio" || !URL.canParse(entry.url)) return (text) => text
  const parsed = new URL(entry.url)
  const secrets: Array<readonly [string, string]> = []
  if (parsed.search !== "") secrets.push([parsed.search, "?…"])
  if (parsed.hash !== "") secrets.push([parsed.hash, "#…"])
  if (parsed.username !== "" || parsed.password !== "") secrets.push([`${parsed.username}:${parsed.password}@`, "…@"])
  // Alone too, when long enough not to be mistaken for ordinary words.
  for (const part of [parsed.password, parsed.username]) if (part.length >= 4) secrets.push([part, "…"])
  return secrets.length === 0 ? (text) => text : (text) => secrets.reduce((hidden, [secret, shown]) => hidden.replaceAll(secret, shown), text)
}

/** How a server is reached, in a line: its command line, or its URL (credentials left out). */
export const describeServer = (entry: ServerEntry): string =>
  printable(entry._tag === "Stdio" ? [entry.command, ...entry.args].join(" ") : shownUrl(entry.url))
