/**
 * PlanckClaw as a library: the three ports, their built-in implementations,
 * and the agent, for running it inside another Effect application.
 */
export * as Agent from "./Agent.js"
export * as AgentConfig from "./AgentConfig.js"
export * as Brain from "./Brain.js"
export * as Claws from "./Claws.js"
export * as Compactor from "./memory/Compactor.js"
export * as ConfigFile from "./config/ConfigFile.js"
export * as Interact from "./Interact.js"
export * as Memory from "./memory/Memory.js"
export * as Prompt from "./Prompt.js"
export * as StartupError from "./StartupError.js"

export * as AnthropicBrain from "./brain/AnthropicBrain.js"
export * as ScriptedBrain from "./brain/ScriptedBrain.js"

export * as InMemoryClaws from "./claws/InMemoryClaws.js"
export * as ScriptClaws from "./claws/ScriptClaws.js"

export * as InMemoryInteract from "./interact/InMemoryInteract.js"
export * as TerminalInteract from "./interact/TerminalInteract.js"
