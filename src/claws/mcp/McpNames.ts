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

/** How a server is reached, in a line: its command line, or its URL. */
export const describeServer = (entry: ServerEntry): string =>
  printable(entry._tag === "Stdio" ? [entry.command, ...entry.args].join(" ") : entry.url)
