/**
 * Every configuration key, for `planckclaw help config`: its default, its
 * range and what it does. The keys are declared (and checked) next to their
 * owners; this table only describes them, and test/HelpConfig.test.ts holds
 * it to the declarations (each key read somewhere in src/, each range the
 * one enforced). Plain data: `bin/planckclaw` renders it without loading
 * the agent.
 */

export interface KeyHelp {
  readonly key: string
  readonly default: string
  /** The values accepted: a numeric range `min–max`, a list of words, or a kind of value. */
  readonly range: string
  readonly meaning: string
}

export interface KeySection {
  readonly title: string
  readonly keys: ReadonlyArray<KeyHelp>
}

export const keySections: ReadonlyArray<KeySection> = [
  {
    title: "Home",
    keys: [
      {
        key: "PLANCKCLAW_HOME",
        default: "the current directory if it is a home (config.env beside memory/, claws/ or agents/), else ~/.planckclaw",
        range: "directory (environment only)",
        meaning: "where config.env, memory/, claws/ and agents/ are found"
      }
    ]
  },
  {
    title: "Brain",
    keys: [
      { key: "PLANCKCLAW_BRAIN", default: "anthropic", range: "anthropic, openai, none or an executable", meaning: "the brain (--brain overrides it)" },
      { key: "ANTHROPIC_API_KEY", default: "(required for the anthropic brain)", range: "header-safe text", meaning: "API key; never logged, never passed to claws" },
      { key: "ANTHROPIC_BASE_URL", default: "https://api.anthropic.com", range: "http(s) URL without user:password@, ? or #", meaning: "any Anthropic-compatible server" },
      { key: "OPENAI_BASE_URL", default: "https://api.openai.com/v1", range: "http(s) URL without user:password@, ? or #", meaning: "any Chat Completions server (OpenRouter, Ollama, llama.cpp, vLLM)" },
      {
        key: "OPENAI_API_KEY",
        default: "(required for the openai brain unless its host is loopback or private)",
        range: "header-safe text",
        meaning: "Bearer token; never logged, never passed to claws"
      },
      { key: "PLANCKCLAW_MODEL", default: "claude-haiku-4-5-20251001", range: "non-empty", meaning: "model for turns and compaction; required with the openai brain" },
      { key: "PLANCKCLAW_MAX_TOKENS", default: "1024", range: "1–1000000", meaning: "max_tokens of a turn (compaction uses 2048)" },
      { key: "PLANCKCLAW_BRAIN_TIMEOUT", default: "60", range: "0.1–3600", meaning: "seconds per HTTP attempt" },
      { key: "PLANCKCLAW_BRAIN_RETRIES", default: "4", range: "0–100", meaning: "retries after the first attempt" },
      { key: "PLANCKCLAW_PROMPT_CACHE", default: "1", range: "0, 1, true, false", meaning: "prompt-caching breakpoints and the anchored history window" },
      { key: "PLANCKCLAW_PRICES", default: "(built-in table)", range: "path to a JSON price table", meaning: "prices for planckclaw usage" }
    ]
  },
  {
    title: "Memory",
    keys: [
      { key: "PLANCKCLAW_DIR", default: "memory/ in the home", range: "directory", meaning: "soul.md, summary.md, history.jsonl, usage.jsonl" },
      { key: "HISTORY_MAX", default: "200", range: "1–1000000000", meaning: "compact when history holds more lines than this" },
      { key: "HISTORY_KEEP", default: "40", range: "0–100000, below HISTORY_MAX", meaning: "lines kept after compaction and sent with each turn" },
      { key: "PLANCKCLAW_COMPACTION_CHUNK", default: "200000", range: "1–10000000", meaning: "characters of old history per compaction request" }
    ]
  },
  {
    title: "Claws",
    keys: [
      { key: "CLAWS_DIR", default: "claws/ in the home", range: "directory", meaning: "where claws (*.sh) are discovered" },
      { key: "PLANCKCLAW_CLAW_TIMEOUT", default: "30", range: "0.1–86400", meaning: "seconds before a claw's whole session is killed" },
      { key: "PLANCKCLAW_CLAW_OUTPUT_MAX", default: "16384", range: "1–1048576", meaning: "bytes of claw output kept (the cut is marked)" }
    ]
  },
  {
    title: "Agent",
    keys: [
      { key: "PLANCKCLAW_MAX_TOOL_ROUNDS", default: "8", range: "1–100", meaning: "tool rounds per turn" },
      { key: "PLANCKCLAW_MAX_MESSAGE_BYTES", default: "65536", range: "1–1048576", meaning: "largest accepted message" },
      { key: "PLANCKCLAW_DEBUG", default: "0", range: "0, 1, true, false", meaning: "1: brain payloads and HTTP statuses on stderr (as --debug)" },
      { key: "PLANCKCLAW_V8_PRETENURING", default: "0", range: "0, 1, true, false", meaning: "1: keep V8's allocation-site pretenuring (run and serve turn it off)" },
      { key: "PLANCKCLAW_V8_EARLY_TIER_UP", default: "1", range: "0, 1, true, false", meaning: "0: keep V8's optimising pace (run and serve quicken it for their first 2.5 s of CPU, 10 minutes at most)" },
      { key: "PLANCKCLAW_RUN_DIR", default: "/tmp/planckclaw for ~/.planckclaw; for another home, planckclaw-NAME-TAG in TMPDIR (/tmp), its own", range: "directory, private to you", meaning: "runtime directory of the six named pipes" }
    ]
  },
  {
    title: "Discord (run --bridge discord)",
    keys: [
      { key: "DISCORD_BOT_TOKEN", default: "(required)", range: "header-safe text", meaning: "the bot token; never logged, never passed to claws" },
      { key: "DISCORD_CHANNEL_ID", default: "(required)", range: "ids, comma-separated", meaning: "channels to answer in" },
      { key: "DISCORD_ALLOWED_USERS", default: "(everyone)", range: "ids, comma-separated", meaning: "only these users are answered" },
      { key: "DISCORD_DMS", default: "0", range: "0, 1", meaning: "1: answer direct messages (from allowed users)" },
      { key: "DISCORD_API_URL", default: "https://discord.com/api", range: "http(s) URL", meaning: "REST base; the gateway URL is learned from it" },
      { key: "DISCORD_CATCH_UP", default: "50,24h", range: "N, N,Hh or off", meaning: "after a restart or a new session, answer at most the last N missed messages per channel, none older than H hours" },
      { key: "DISCORD_ATTACHMENT_BYTES", default: "65536", range: "0–8388608", meaning: "largest text attachment added to a message; larger or non-text ones are only named" },
      { key: "DISCORD_AGENT_PER", default: "channel", range: "channel, user, server, one", meaning: "serve --bridge discord: which agent answers a message (direct messages: always the sender's own)" }
    ]
  },
  {
    title: "Serve (planckclaw serve)",
    keys: [
      { key: "PLANCKCLAW_AGENTS_DIR", default: "agents/ in the home", range: "directory", meaning: "one directory per agent, named by its id" },
      { key: "PLANCKCLAW_HTTP_TOKEN", default: "(none: loopback only)", range: "text", meaning: "Bearer token every route but /v1/health needs" },
      { key: "PLANCKCLAW_MAX_CONCURRENT_TURNS", default: "16", range: "1–10000", meaning: "brain calls in flight across all agents" },
      { key: "PLANCKCLAW_AGENT_IDLE", default: "600", range: "0.001–604800", meaning: "seconds without a message before an agent is released" },
      { key: "PLANCKCLAW_AGENTS_HOLDING_FILES", default: "128", range: "0–100000", meaning: "agents used last keeping their 3 memory files open between messages" },
      { key: "PLANCKCLAW_IDEMPOTENCY_KEYS", default: "1000", range: "1–1000000", meaning: "replies kept per agent for Idempotency-Key retries" },
      {
        key: "PLANCKCLAW_MAX_CONNECTIONS",
        default: "1024, or ulimit -n less the reserve if lower",
        range: "1–1000000, leaving the reserve",
        meaning: "HTTP connections at once; the next 16 are answered 503, any beyond refused. The reserve: 3 per agent holding files, 4 per turn, 80"
      },
      { key: "PLANCKCLAW_HTTP_REQUEST_TIMEOUT", default: "30", range: "0.1–3600", meaning: "seconds a connection has to send a whole request, headers and body (a new one too); 408 after" },
      { key: "PLANCKCLAW_HTTP_IDLE_TIMEOUT", default: "5", range: "0.1–3600", meaning: "seconds a kept-alive connection stays open without a request" },
      {
        key: "PLANCKCLAW_STOP_GRACE",
        default: "30",
        range: "0–3600",
        meaning: "seconds a stop (SIGTERM, SIGINT) gives the requests in flight; then their connections close, and accepted messages are answered at the next start"
      }
    ]
  },
  {
    title: "PostgreSQL (planckclaw memory, serve --cluster)",
    keys: [
      { key: "PLANCKCLAW_DATABASE_URL", default: "(required there)", range: "postgres:// URL", meaning: "the database; its password is never logged" },
      { key: "PLANCKCLAW_RUNNER_ADDRESS", default: "(required for --cluster)", range: "HOST:PORT", meaning: "serve --cluster: where this runner is reached by its peers" },
      { key: "PLANCKCLAW_RUNNER_LISTEN", default: "PLANCKCLAW_RUNNER_ADDRESS", range: "HOST:PORT", meaning: "where the runner listens, when not the address it advertises (NAT, containers)" },
      { key: "PLANCKCLAW_CLUSTER_SHARDS", default: "300", range: "1–10000", meaning: "shards agents are spread over; the same on every runner of one database" },
      { key: "PLANCKCLAW_CLUSTER_LOCK_EXPIRATION", default: "10", range: "3–600", meaning: "seconds after which a silent runner counts as dead and its agents move" },
      { key: "PLANCKCLAW_CLUSTER_POLL", default: "1", range: "0.05–60", meaning: "seconds between reads of shard assignments and stored messages" },
      { key: "PLANCKCLAW_CLUSTER_SEND_TIMEOUT", default: "60", range: "1–3600", meaning: "seconds an HTTP message waits for its agent (maybe failing over) before a 503" },
      { key: "PLANCKCLAW_CLUSTER_RETENTION", default: "604800", range: "3600–315360000", meaning: "seconds answered messages and their Idempotency-Keys are kept before pruning" }
    ]
  }
]

export const allKeys: ReadonlyArray<KeyHelp> = keySections.flatMap((section) => section.keys)
