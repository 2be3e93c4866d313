/**
 * PlanckClaw as a library: what a host needs to run the agent inside its own
 * Effect application. Each module is exported with its errors, so a host can
 * write the type of everything it assembles; the rest of src/ (the command
 * line, the pipes, the turn's parts) is internal and may change.
 * test/PublicApi.test.ts pins these names: a change here is a deliberate one.
 */

// The agent: one message to its outcome (Agent.respond), built from its ports (Agent.makeFromPorts, as a layer Agent.fromPorts, Agent.layerWithMemory) and its compactor.
export * as Agent from "./agent/Agent.js"
export * as Compactor from "./agent/Compactor.js"

// The ports: what the agent talks to, and the memory store it is built from.
export * as Brain from "./ports/Brain.js"
export * as Claws from "./ports/Claws.js"
export * as Interact from "./ports/Interact.js"
export * as FoldStore from "./memory/FoldStore.js"
export * as Inbox from "./memory/Inbox.js"
export * as Memory from "./memory/Memory.js"
// Its run lock: one process (one agent) at a time writes a memory directory; MemoryInUse refuses a second.
export * as MemoryHold from "./memory/MemoryHold.js"

// In-memory adapters, for a host's own transports and its tests.
export * as InMemoryClaws from "./claws/InMemoryClaws.js"
export * as InMemoryInteract from "./interact/InMemoryInteract.js"
export * as ScriptedBrain from "./brain/ScriptedBrain.js"

// The built-in adapters: brains over the Anthropic and OpenAI-compatible APIs, claws as shell scripts.
export * as AnthropicBrain from "./brain/AnthropicBrain.js"
export * as OpenAiBrain from "./brain/OpenAiBrain.js"
export * as ScriptClaws from "./claws/ScriptClaws.js"

// Configuration: the agent's settings, config.env as a ConfigProvider, a setting a part cannot start without.
export * as AgentConfig from "./config/AgentConfig.js"
export * as ConfigFile from "./config/ConfigFile.js"
export * as MissingSetting from "./config/MissingSetting.js"

// Many agents in one process, each started on its first message and released when idle (what `planckclaw serve` hosts).
export * as AgentHost from "./hosts/serve/AgentHost.js"

// The HTTP API of the agent host: its server, its contract (routes, Schemas, OpenAPI), its errors and a typed client.
export * as HttpApi from "./hosts/serve/HttpApi.js"
export * as HttpApiClientOf from "./hosts/serve/HttpApiClientOf.js"
export * as HttpApiDefinition from "./hosts/serve/HttpApiDefinition.js"
export * as HttpApiErrors from "./hosts/serve/HttpApiErrors.js"

// Past one machine (agents as effect/cluster entities over PostgreSQL): `planckclaw/cluster`, a subpath of its
// own (src/hosts/cluster/index.ts), so a host of this entry loads none of effect/cluster, effect/rpc, effect/sql.
