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

/** Why a claw's tool `name` is left out when it starts with the MCP servers' prefix. */
export const reservedReason = (name: string): string =>
  `tool "${name}" left out: names starting ${toolPrefix} are the MCP servers' (mcp.json)`

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

/** How long a value of an entry's `env` or `headers` must be to be hidden: shorter ones are ordinary words ("1", "true"). */
export const hiddenValueLength = 8

/** The values an entry's `env` or `headers` give, and the credential after a scheme (`Bearer TOKEN`) alone. */
const entryValues = (entry: ServerEntry): Array<string> =>
  Object.values(entry._tag === "Stdio" ? entry.env : entry.headers).flatMap((value) => {
    const bare = value.trim()
    const credential = bare.split(/\s+/).at(-1) ?? ""
    return credential === bare ? [bare] : [bare, credential]
  }).filter((value) => value.length >= hiddenValueLength)

/**
 * Text about a server (an error from its client, which quotes the URL whole;
 * the end of its stderr; a server's error, which may echo its key) with its
 * URL's user, password, query and fragment left out, and the values its
 * entry's `env` or `headers` give it (a token, a key): such words go to
 * logs, to `doctor` and to the model as a tool's failure.
 */
export const hidingSecrets = (entry: ServerEntry): (text: string) => string => {
  const secrets: Array<readonly [string, string]> = entryValues(entry).map((value) => [value, "…"])
  if (entry._tag === "Http" && URL.canParse(entry.url)) {
    const parsed = new URL(entry.url)
    if (parsed.search !== "") secrets.push([parsed.search, "?…"])
    if (parsed.hash !== "") secrets.push([parsed.hash, "#…"])
    if (parsed.username !== "" || parsed.password !== "") secrets.push([`${parsed.username}:${parsed.password}@`, "…@"])
    // Alone too, when long enough not to be mistaken for ordinary words.
    for (const part of [parsed.password, parsed.username]) if (part.length >= 4) secrets.push([part, "…"])
  }
  // The longest first, so that no part of one is left where a shorter one inside it was hidden.
  secrets.sort(([a], [b]) => b.length - a.length)
  return secrets.length === 0 ? (text) => text : (text) => secrets.reduce((hidden, [secret, shown]) => hidden.replaceAll(secret, shown), text)
}

/** How a server is reached, in a line: its command line, or its URL (credentials left out). */
export const describeServer = (entry: ServerEntry): string =>
  printable(entry._tag === "Stdio" ? [entry.command, ...entry.args].join(" ") : shownUrl(entry.url))
