/**
 * PlanckClaw as a library: the three ports, their built-in implementations
 * (adapters), the agent and its memory, the FIFO wire and the bridges that
 * serve its far ends, for running it inside another Effect application.
 * The domain errors are exported with their modules, so a host can write the
 * type of everything it assembles.
 */
export * as Agent from "./Agent.js"
export * as AgentConfig from "./AgentConfig.js"
export * as AgentService from "./AgentService.js"
export * as Intake from "./Intake.js"
export * as Turn from "./Turn.js"
export * as Brain from "./Brain.js"
export * as Claws from "./Claws.js"
export * as Interact from "./Interact.js"
export * as Prompt from "./Prompt.js"

export * as ConfigFile from "./config/ConfigFile.js"
export * as MissingSetting from "./config/MissingSetting.js"

export * as Compactor from "./memory/Compactor.js"
export * as FoldStore from "./memory/FoldStore.js"
export * as Inbox from "./memory/Inbox.js"
export * as Memory from "./memory/Memory.js"
export * as MemoryHold from "./MemoryHold.js"

export * as AnthropicBrain from "./brain/AnthropicBrain.js"
export * as FifoBrain from "./brain/FifoBrain.js"
export * as ScriptedBrain from "./brain/ScriptedBrain.js"

export * as FifoClaws from "./claws/FifoClaws.js"
export * as InMemoryClaws from "./claws/InMemoryClaws.js"
export * as ScriptClaws from "./claws/ScriptClaws.js"

export * as FifoInteract from "./interact/FifoInteract.js"
export * as InMemoryInteract from "./interact/InMemoryInteract.js"
export * as TerminalInteract from "./interact/TerminalInteract.js"
// The Discord adapter is reached through Bridges.interactAdapters.discord,
// which loads discord.js only when it is built; its refusal is importable alone.
export * as DiscordRefused from "./interact/discord/DiscordRefused.js"

export * as Bridges from "./Bridges.js"
export * as BrainFrame from "./fifo/BrainFrame.js"
export * as ClawFrame from "./fifo/ClawFrame.js"
export * as Exchange from "./fifo/Exchange.js"
export * as ExternalBridge from "./fifo/ExternalBridge.js"
export * as FifoPaths from "./fifo/FifoPaths.js"
export * as Framing from "./fifo/Framing.js"
export * as Handover from "./fifo/Handover.js"
export * as InteractLine from "./fifo/InteractLine.js"
export * as PipeEnd from "./fifo/PipeEnd.js"
export * as RunningAgent from "./fifo/RunningAgent.js"
export * as RuntimeDir from "./fifo/RuntimeDir.js"
export * as Serve from "./fifo/Serve.js"

// Many agents in one process, and their HTTP API (what `planckclaw serve` runs).
export * as AgentHost from "./service/AgentHost.js"
export * as AgentId from "./service/AgentId.js"
export * as HostError from "./service/HostError.js"
export * as HttpApi from "./service/HttpApi.js"
// The HTTP API's contract (routes, Schemas, errors; its OpenAPI document) and a typed client of it.
export * as HttpApiDefinition from "./service/HttpApiDefinition.js"
export * as HttpApiErrors from "./service/HttpApiErrors.js"
export * as HttpApiClientOf from "./service/HttpApiClientOf.js"

// Past one machine (agents as @effect/cluster entities over PostgreSQL): `planckclaw/cluster`, a subpath of its
// own, so a host that embeds only this entry needs none of @effect/cluster, @effect/rpc, @effect/sql, @effect/sql-pg.
