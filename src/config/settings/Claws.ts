/** The claws: where they are found and how long and how much they may say. */
import type { NumberSetting, TextSetting } from "../Setting.js"

export const ClawsDir = {
  key: "CLAWS_DIR",
  kind: "text",
  accepts: "directory",
  default: "./claws",
  defaultText: "claws/ in the home",
  description: "where claws (*.sh) are discovered, before every message",
  path: true,
  example: "claws"
} as const satisfies TextSetting

export const ClawTimeout = {
  key: "PLANCKCLAW_CLAW_TIMEOUT",
  kind: "seconds",
  min: 0.1,
  max: 86_400,
  default: 30,
  description: "seconds before a claw's whole session is killed"
} as const satisfies NumberSetting

export const ClawOutputMax = {
  key: "PLANCKCLAW_CLAW_OUTPUT_MAX",
  kind: "integer",
  min: 1,
  // Past 1 MiB a result would crowd out the conversation anyway.
  max: 1024 * 1024,
  default: 16_384,
  description: "bytes of claw output kept (the cut is marked)"
} as const satisfies NumberSetting

export const McpConfig = {
  key: "PLANCKCLAW_MCP_CONFIG",
  kind: "text",
  accepts: "file",
  default: "./mcp.json",
  defaultText: "mcp.json in the home",
  description: "the MCP servers whose tools are offered beside the claws (docs/mcp.md); a missing file means none",
  path: true,
  example: "mcp.json"
} as const satisfies TextSetting

export const group = { title: "Claws", settings: [ClawsDir, ClawTimeout, ClawOutputMax, McpConfig] } as const
