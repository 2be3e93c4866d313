/** `planckclaw serve`: its agents, its HTTP API and its limits. */
import type { NumberSetting, SwitchSetting, TextSetting } from "../Setting.js"

export const AgentsDir = {
  key: "PLANCKCLAW_AGENTS_DIR",
  kind: "text",
  accepts: "directory",
  default: "./agents",
  defaultText: "agents/ in the home",
  description: "one directory per agent, named by its id",
  path: true,
  example: "agents"
} as const satisfies TextSetting

export const HttpToken = {
  key: "PLANCKCLAW_HTTP_TOKEN",
  kind: "text",
  accepts: "text",
  defaultText: "(none: loopback only)",
  description: "Bearer token every route but /v1/health needs; without it, serve listens on loopback only",
  secret: true
} as const satisfies TextSetting

export const WebConsole = {
  key: "PLANCKCLAW_CONSOLE",
  kind: "switch",
  default: true,
  description: "the web console at / on serve's address (--no-console turns it off)",
  details: "see [the console](serve.md#the-web-console)"
} as const satisfies SwitchSetting

export const MaxConcurrentTurns = {
  key: "PLANCKCLAW_MAX_CONCURRENT_TURNS",
  kind: "integer",
  min: 1,
  max: 10_000,
  default: 16,
  description: "brain calls in flight across all agents (with --cluster, on this runner)"
} as const satisfies NumberSetting

export const AgentIdle = {
  key: "PLANCKCLAW_AGENT_IDLE",
  kind: "seconds",
  min: 0.001,
  max: 7 * 24 * 3600,
  default: 600,
  description: "seconds without a message before an agent is released (started again by its next one)"
} as const satisfies NumberSetting

export const AgentsHoldingFiles = {
  key: "PLANCKCLAW_AGENTS_HOLDING_FILES",
  kind: "integer",
  min: 0,
  max: 100_000,
  default: 128,
  description: "agents used last keeping their 4 memory files open between messages; 0: every agent closes them",
  details: "the files are history, its ledger, the inbox journal and usage.jsonl; the other agents close them after each message"
} as const satisfies NumberSetting

export const IdempotencyKeys = {
  key: "PLANCKCLAW_IDEMPOTENCY_KEYS",
  kind: "integer",
  min: 1,
  max: 1_000_000,
  default: 1000,
  description: "replies kept per agent for Idempotency-Key retries"
} as const satisfies NumberSetting

export const MaxConnections = {
  key: "PLANCKCLAW_MAX_CONNECTIONS",
  kind: "integer",
  min: 1,
  max: 1_000_000,
  rangeNote: "leaving the reserve",
  default: undefined,
  defaultText: "1024, or ulimit -n less the reserve if lower",
  description: "HTTP connections at once; the next 16 are answered 503, any beyond refused. " +
    "The reserve: 4 per agent holding files, 4 per turn, 80",
  details: "a value eating into the reserve is refused at start (exit 2)",
  example: "1024"
} as const satisfies NumberSetting

export const HttpRequestTimeout = {
  key: "PLANCKCLAW_HTTP_REQUEST_TIMEOUT",
  kind: "seconds",
  min: 0.1,
  max: 3600,
  default: 30,
  description: "seconds a connection has to send a whole request, headers and body (a new one too); 408 after"
} as const satisfies NumberSetting

export const HttpIdleTimeout = {
  key: "PLANCKCLAW_HTTP_IDLE_TIMEOUT",
  kind: "seconds",
  min: 0.1,
  max: 3600,
  default: 5,
  description: "seconds a kept-alive connection stays open without a request"
} as const satisfies NumberSetting

export const StopGrace = {
  key: "PLANCKCLAW_STOP_GRACE",
  kind: "seconds",
  min: 0,
  max: 3600,
  default: 30,
  description: "seconds a stop (SIGTERM, SIGINT, SIGHUP) gives the requests in flight; then their connections close, " +
    "and accepted messages are answered at the next start",
  details: "see [`planckclaw serve`](serve.md)"
} as const satisfies NumberSetting

export const McpServersMax = {
  key: "PLANCKCLAW_MCP_SERVERS_MAX",
  kind: "integer",
  min: 1,
  max: 10_000,
  default: 32,
  description: "MCP servers of the agents' own mcp.json files at once, each shared by the agents naming it; " +
    "past it an agent's new server is refused, with why",
  details: "see [MCP in serve](mcp.md#in-serve-each-agents-own-mcpjson)"
} as const satisfies NumberSetting

export const IdleCollection = {
  key: "PLANCKCLAW_IDLE_COLLECTION",
  kind: "seconds",
  min: 0,
  max: 24 * 3600,
  default: 10,
  description: "after agents were released, seconds without a message before serve gives their memory back (one full garbage collection); 0: never",
  details: "see [memory](serve.md#memory)"
} as const satisfies NumberSetting

export const group = {
  title: "Serve (planckclaw serve)",
  settings: [
    AgentsDir,
    HttpToken,
    WebConsole,
    MaxConcurrentTurns,
    AgentIdle,
    AgentsHoldingFiles,
    IdleCollection,
    IdempotencyKeys,
    MaxConnections,
    HttpRequestTimeout,
    HttpIdleTimeout,
    StopGrace,
    McpServersMax
  ]
} as const
