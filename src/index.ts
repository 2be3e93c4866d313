/**
 * PlanckClaw as a library: the three ports, their built-in implementations
 * (adapters), the agent and its memory, the FIFO wire and the bridges that
 * serve its far ends, for running it inside another Effect application.
 * The domain errors are exported with their modules, so a host can write the
 * type of everything it assembles.
 */
export * as Agent from "./agent/Agent.js"
export * as AgentConfig from "./config/AgentConfig.js"
export * as AgentService from "./agent/AgentService.js"
export * as Intake from "./agent/Intake.js"
export * as Turn from "./agent/Turn.js"
export * as Brain from "./ports/Brain.js"
export * as Claws from "./ports/Claws.js"
export * as Interact from "./ports/Interact.js"
export * as Prompt from "./agent/Prompt.js"

export * as ConfigFile from "./config/ConfigFile.js"
export * as MissingSetting from "./config/MissingSetting.js"

export * as Compactor from "./agent/Compactor.js"
export * as FoldStore from "./memory/FoldStore.js"
export * as Inbox from "./memory/Inbox.js"
export * as Memory from "./memory/Memory.js"
export * as MemoryHold from "./memory/MemoryHold.js"

export * as AnthropicBrain from "./brain/AnthropicBrain.js"
export * as FifoBrain from "./pipes/FifoBrain.js"
export * as ScriptedBrain from "./brain/ScriptedBrain.js"

export * as FifoClaws from "./pipes/FifoClaws.js"
export * as InMemoryClaws from "./claws/InMemoryClaws.js"
export * as ScriptClaws from "./claws/ScriptClaws.js"

export * as FifoInteract from "./pipes/FifoInteract.js"
export * as InMemoryInteract from "./interact/InMemoryInteract.js"
export * as TerminalInteract from "./interact/TerminalInteract.js"
// The Discord adapter is reached through Bridges.interactAdapters.discord,
// which loads discord.js only when it is built; its refusal is importable alone.
export * as DiscordRefused from "./interact/discord/DiscordRefused.js"

export * as Bridges from "./pipes/Bridges.js"
export * as BrainFrame from "./pipes/BrainFrame.js"
export * as ClawFrame from "./pipes/ClawFrame.js"
export * as Exchange from "./pipes/Exchange.js"
export * as ExternalBridge from "./pipes/ExternalBridge.js"
export * as FifoPaths from "./pipes/FifoPaths.js"
export * as Framing from "./runtime/Framing.js"
export * as Handover from "./pipes/Handover.js"
export * as InteractLine from "./pipes/InteractLine.js"
export * as PipeEnd from "./pipes/PipeEnd.js"
export * as RunningAgent from "./pipes/RunningAgent.js"
export * as RuntimeDir from "./pipes/RuntimeDir.js"
export * as Serve from "./pipes/Serve.js"

// Many agents in one process, and their HTTP API (what `planckclaw serve` runs).
export * as AgentHost from "./hosts/serve/AgentHost.js"
export * as AgentId from "./hosts/serve/AgentId.js"
export * as HostError from "./hosts/serve/HostError.js"
export * as HttpApi from "./hosts/serve/HttpApi.js"
// The HTTP API's contract (routes, Schemas, errors; its OpenAPI document) and a typed client of it.
export * as HttpApiDefinition from "./hosts/serve/HttpApiDefinition.js"
export * as HttpApiErrors from "./hosts/serve/HttpApiErrors.js"
export * as HttpApiClientOf from "./hosts/serve/HttpApiClientOf.js"

// Past one machine (agents as @effect/cluster entities over PostgreSQL): `planckclaw/cluster`, a subpath of its
// own, so a host that embeds only this entry needs none of @effect/cluster, @effect/rpc, @effect/sql, @effect/sql-pg.
