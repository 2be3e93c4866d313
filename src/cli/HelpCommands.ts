/**
 * The help's entries: every command of `planckclaw` with its usage, options,
 * arguments and examples, and the options any command takes. Plain data,
 * importing nothing (`bin/planckclaw` loads it through HelpText.ts without
 * loading the agent); apart from HelpText.ts, which renders it, so each
 * reads in one sitting.
 */

export interface OptionHelp {
  readonly name: string
  readonly description: string
}

export interface CommandHelp {
  readonly name: string
  readonly summary: string
  readonly usage: ReadonlyArray<string>
  readonly description: string
  readonly arguments?: ReadonlyArray<OptionHelp>
  readonly options: ReadonlyArray<OptionHelp>
  readonly examples: ReadonlyArray<string>
}

const debug: OptionHelp = { name: "--debug", description: "print brain payloads and HTTP statuses to stderr (same as PLANCKCLAW_DEBUG=1)" }
const model: OptionHelp = {
  name: "--model NAME",
  description: "the model to ask, for turns and compaction; overrides PLANCKCLAW_MODEL"
}
const brain = (what: string): OptionHelp => ({
  name: "--brain NAME",
  description: `${what}; default PLANCKCLAW_BRAIN, else anthropic`
})

export const commands: ReadonlyArray<CommandHelp> = [
  {
    name: "run",
    summary: "talk to the agent in the terminal, on Discord or through the pipes",
    usage: [
      "planckclaw run [--bridge cli|discord|none|PATH] [--brain anthropic|openai|none|PATH]",
      "               [--claw scripts|none|PATH] [--model NAME] [--verbose] [--debug]"
    ],
    description: "Runs one agent on the home's memory: answers messages from the chosen bridge one at a time until its " +
      "input ends (Ctrl-D in the terminal; the end of a pipe). Piped input is one message per line, each answered on " +
      "standard output; logs go to standard error.",
    options: [
      { name: "--bridge NAME", description: "who talks: cli (the terminal, default), discord (DISCORD_* settings), none (nothing serves the interact pipes) or the path of an executable bridge" },
      brain("who thinks: anthropic, openai (any Chat Completions API), none (an outside process serves the brain pipes) or an executable"),
      { name: "--claw NAME", description: "who acts: scripts (the claws in CLAWS_DIR, default), none (served from outside) or an executable" },
      model,
      { name: "--verbose", description: "when standard output is not a terminal, a line per tool call on stderr; stdout stays the replies" },
      debug
    ],
    examples: ["planckclaw run", "printf 'hi\\nwhat time is it?\\n' | planckclaw run", "planckclaw run --bridge discord"]
  },
  {
    name: "serve",
    summary: "host many agents behind an HTTP API",
    usage: [
      "planckclaw serve [--http HOST:PORT] [--brain anthropic|openai] [--model NAME] [--bridge none|discord] [--no-console]",
      "                 [--debug]",
      "planckclaw serve --cluster [--http HOST:PORT] [--brain anthropic|openai] [--model NAME] [--bridge none|discord]",
      "                 [--debug]"
    ],
    description: "Hosts every agent of PLANCKCLAW_AGENTS_DIR (agents/ in the home) in one process, each created on its " +
      "first message, until stopped (Ctrl-C, SIGTERM, SIGHUP).",
    options: [
      { name: "--http HOST:PORT", description: "where the HTTP API listens (default 127.0.0.1:7878; [::1]:PORT for IPv6; port 0 picks a free one); a non-loopback host needs PLANCKCLAW_HTTP_TOKEN" },
      brain("the brain, called in process: anthropic or openai"),
      { name: "--model NAME", description: "the model to ask, for every agent without a model in its own config.env; overrides PLANCKCLAW_MODEL" },
      { name: "--bridge NAME", description: "none (the HTTP API only, default) or discord: answer Discord too, each message routed to an agent by DISCORD_AGENT_PER (with --cluster: one such runner holds the gateway, the others wait to take over)" },
      { name: "--no-console", description: "serve the API alone, without the web console at / (PLANCKCLAW_CONSOLE=0)" },
      { name: "--cluster", description: "join a cluster of runners over PostgreSQL (PLANCKCLAW_DATABASE_URL, PLANCKCLAW_RUNNER_ADDRESS): any runner answers for any agent, memory in the database" },
      debug
    ],
    examples: [
      "planckclaw serve --http 127.0.0.1:7878",
      "curl -s -X POST http://127.0.0.1:7878/v1/agents/alice/messages -H 'content-type: application/json' -d '{\"text\": \"hi\"}'"
    ]
  },
  {
    name: "compact",
    summary: "fold old history into summary.md now",
    usage: ["planckclaw compact [--agent ID] [--model NAME] [--debug]"],
    description: "Summarises everything older than the last HISTORY_KEEP lines of history into summary.md, asking the " +
      "brain PLANCKCLAW_BRAIN names (an executable bridge is started for the command, on pipes of its own). Safe while " +
      "a run or serve is active on the same memory.",
    options: [
      { name: "--agent ID", description: "compact agent ID of PLANCKCLAW_AGENTS_DIR (as serve hosts it) instead of PLANCKCLAW_DIR" },
      model,
      debug
    ],
    examples: ["planckclaw compact", "planckclaw compact --agent alice"]
  },
  {
    name: "tools",
    summary: "list the tools the claws and MCP servers offer",
    usage: ["planckclaw tools [--agent ID]"],
    description: "Lists the tools declared by the claws in CLAWS_DIR (claws/ in the home), then every claw file or " +
      "#TOOLS: line that was skipped, with the file, line and reason; then starts each MCP server of mcp.json and " +
      "lists its tools as the model sees them (mcp__SERVER__TOOL), or why it offers none.",
    options: [
      {
        name: "--agent ID",
        description: "what agent ID of PLANCKCLAW_AGENTS_DIR is offered under serve: its own mcp.json's servers too " +
          "(each started), in place of the home's of the same name"
      }
    ],
    examples: ["planckclaw tools", "planckclaw tools --agent alice"]
  },
  {
    name: "usage",
    summary: "tokens and estimated cost per day and model",
    usage: ["planckclaw usage [--agent ID] [--since YYYY-MM-DD] [--until YYYY-MM-DD] [--json]"],
    description: "Sums the usage ledger (usage.jsonl in the memory directory) per day (UTC) and model, with a cost " +
      "estimated from list prices (PLANCKCLAW_PRICES adds your own). Reads only: safe while a run is active.",
    options: [
      { name: "--agent ID", description: "the ledger of agent ID of PLANCKCLAW_AGENTS_DIR (as serve keeps it) instead of PLANCKCLAW_DIR's" },
      { name: "--since YYYY-MM-DD", description: "only days from this one on" },
      { name: "--until YYYY-MM-DD", description: "only days up to this one" },
      { name: "--json", description: "print the report as JSON" }
    ],
    examples: ["planckclaw usage --since 2025-06-01", "planckclaw usage --agent alice --json"]
  },
  {
    name: "bridge",
    summary: "serve one built-in bridge on a running agent's pipes",
    usage: ["planckclaw bridge cli|discord|anthropic|openai|scripts"],
    description: "Serves one built-in bridge, as a process of its own, on the pipes of the agent running in " +
      "PLANCKCLAW_RUN_DIR (the original four-process layout). Refuses when no run owns them; ends when that run ends.",
    arguments: [{ name: "NAME", description: "cli or discord (interact), anthropic or openai (brain), scripts (claws)" }],
    options: [],
    examples: ["planckclaw run --bridge none --brain none --claw none & planckclaw bridge anthropic"]
  },
  {
    name: "init",
    summary: "make a home: config.env, memory/soul.md, the shipped claws",
    usage: ["planckclaw init [DIR]"],
    description: "Creates the files of a home from the package's templates, only those missing: an existing file is " +
      "never overwritten. Says what it created and how to start.",
    arguments: [{ name: "DIR", description: "where to make it; default PLANCKCLAW_HOME, else the current directory if it is a home, else ~/.planckclaw" }],
    options: [],
    examples: ["planckclaw init", "planckclaw init ~/agents/work && cd ~/agents/work && planckclaw run"]
  },
  {
    name: "doctor",
    summary: "check the setup, one line per check, and say what to fix",
    usage: ["planckclaw doctor [--brain NAME] [--agent ID]"],
    description: "Checks the configuration, the brain (one authenticated GET of the model, never a paid turn), the " +
      "claws, the MCP servers of mcp.json (each started), the memory and runtime directories, another run holding the memory, and Discord when " +
      "DISCORD_BOT_TOKEN is set. Each check is a line with ✔ or ✘ and what to do; exit 0 when all pass, 1 otherwise.",
    options: [
      brain("the brain to check, as run --brain names it: anthropic or openai"),
      {
        name: "--agent ID",
        description: "also check agent ID of PLANCKCLAW_AGENTS_DIR (serve's): its directory, and its own mcp.json " +
          "(each refused entry with why, each server started)"
      }
    ],
    examples: ["planckclaw doctor", "planckclaw doctor --brain openai", "planckclaw doctor --agent alice"]
  },
  {
    name: "memory",
    summary: "move an agent's memory between files and PostgreSQL",
    usage: ["planckclaw memory export --agent ID DIR", "planckclaw memory import --agent ID DIR [--replace]"],
    description: "export writes the agent's history.jsonl, summary.md (and soul.md, usage.jsonl when it has them) " +
      "from the database of PLANCKCLAW_DATABASE_URL into DIR, which must hold no memory files; import loads them " +
      "into the database in one transaction, refusing an agent that already has memory unless --replace.",
    arguments: [{ name: "DIR", description: "the directory of the agent's memory files" }],
    options: [
      { name: "--agent ID", description: "the agent's id, as planckclaw serve names it" },
      { name: "--replace", description: "import: overwrite the memory the agent already has in the database" }
    ],
    examples: ["planckclaw memory export --agent discord-c123 ./backup", "planckclaw memory import --agent alice ./agents/alice"]
  },
  {
    name: "mcp",
    summary: "serve this home's claws and agent to an MCP client (stdio)",
    usage: ["planckclaw mcp [--brain anthropic|openai] [--model NAME] [--debug]"],
    description: "Speaks MCP on standard input and output, for Claude Desktop, Cursor or any MCP client that starts " +
      "a command: the claws of CLAWS_DIR as tools (their #TOOLS: schemas), and ask_agent, which sends a message to " +
      "the agent and returns its reply (remembered as a turn). Ends when the client closes its input.",
    options: [
      brain("the brain ask_agent calls, in process: anthropic or openai"),
      model,
      debug
    ],
    examples: [
      "planckclaw mcp",
      "{\"mcpServers\": {\"planckclaw\": {\"command\": \"planckclaw\", \"args\": [\"mcp\"]}}}   (claude_desktop_config.json)"
    ]
  },
  {
    name: "schedule",
    summary: "messages the agent receives on a schedule: reminders, digests, heartbeats",
    usage: [
      "planckclaw schedule add [--agent ID [--cluster]] (--cron EXPR [--tz ZONE] | --every DURATION | --at TIME)",
      "                        [--to terminal|discord:CHANNEL|webhook:URL|none] TEXT",
      "planckclaw schedule list [--agent ID [--cluster]] [--json]",
      "planckclaw schedule remove [--agent ID [--cluster]] ID"
    ],
    description: "Keeps the agent's schedule in schedules.json in its memory directory. A running run (or serve, for " +
      "its agents) sends TEXT to the agent when an entry is due, as a turn marked [scheduled ID] in history, and the " +
      "reply goes to --to. A run missed within PLANCKCLAW_SCHEDULE_GRACE fires once at the next start; older ones are " +
      "skipped. The agent can manage its own entries too (its schedule tools).",
    arguments: [{ name: "TEXT", description: "add: the message the agent receives; remove: ID, the entry's id" }],
    options: [
      { name: "--agent ID", description: "the schedule of agent ID of PLANCKCLAW_AGENTS_DIR (as serve hosts it) instead of PLANCKCLAW_DIR's" },
      { name: "--cluster", description: "with --agent: agent ID's schedule in the cluster's database (PLANCKCLAW_DATABASE_URL), fired by serve --cluster" },
      { name: "--cron EXPR", description: "a cron expression: 5 fields (minute hour day month weekday) or 6 with seconds first" },
      { name: "--tz ZONE", description: "the IANA time zone of --cron or of a wall-clock --at (default: this machine's)" },
      { name: "--every DURATION", description: "an interval from now: 30s, 5m, 1h30m, 2d (whole seconds, at least 1s, at most 36500d)" },
      { name: "--at TIME", description: "once: +10m, 09:00 (its next coming), 2026-12-24 09:00, or 2026-12-24T08:00:00Z; a date that exists, after now and before the year 10000" },
      { name: "--to WHERE", description: "where the reply goes: terminal (the run's; the default without --agent), discord:CHANNEL_ID, webhook:URL (POST of {agent, schedule, reply}) or none (memory only; the default with --agent)" },
      { name: "--json", description: "list: print the entries as JSON, each with its next run, and why the agent would refuse its message (refused), or null" }
    ],
    examples: [
      "planckclaw schedule add --at 09:00 'remind me to call the bank'",
      "planckclaw schedule add --cron '0 8 * * 1-5' --tz Europe/Paris --to discord:123456789012345678 'summarise the news'",
      "planckclaw schedule add --every 30m --to webhook:https://example.com/hook 'check the build; say only if it broke'"
    ]
  },
  {
    name: "help",
    summary: "this help, a command's, or every configuration key",
    usage: ["planckclaw help [COMMAND|config]"],
    description: "Prints the help of a command (as `planckclaw COMMAND --help` does), or with `config` every setting " +
      "config.env may hold, with its default and range.",
    arguments: [{ name: "TOPIC", description: "a command name, or config" }],
    options: [],
    examples: ["planckclaw help config"]
  }
]

export const globalOptions: ReadonlyArray<OptionHelp> = [
  { name: "-h, --help", description: "show help (also after a command: planckclaw run --help)" },
  { name: "-v, --version", description: "print the version" },
  { name: "--log-level LEVEL", description: "least severe log lines shown on stderr, before or after the command: all, trace, debug, info (default), warning, error, fatal, none" },
  { name: "--completions SHELL", description: "print a completion script for sh, bash, fish or zsh; e.g. source <(planckclaw --completions bash)" }
]
