/**
 * PlanckClaw as a library: the three ports, their built-in implementations,
 * and the agent, for running it inside another Effect application.
 */
export * as Agent from "./Agent.js"
export * as AgentConfig from "./AgentConfig.js"
export * as Brain from "./Brain.js"
export * as Claws from "./Claws.js"
export * as Compaction from "./Compaction.js"
export * as ConfigFile from "./ConfigFile.js"
export * as Interact from "./Interact.js"
export * as Memory from "./Memory.js"
export * as Prompt from "./Prompt.js"
export * as StartupError from "./StartupError.js"

export * as AnthropicBrain from "./brain/Anthropic.js"
export * as ScriptedBrain from "./brain/Scripted.js"

export * as InMemoryClaws from "./claws/InMemory.js"
export * as ScriptClaws from "./claws/Scripts.js"

export * as InMemoryInteract from "./interact/InMemory.js"
export * as TerminalInteract from "./interact/Terminal.js"
