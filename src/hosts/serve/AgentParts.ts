/**
 * One started agent's parts, the first step of its start (AgentInstance.make):
 * its settings (its config.env over the host's), its memory held for this
 * process and made directly rather than from layers (an agent's start is
 * most of the cost of its first message, and these take the host's shared
 * parts: the owner file, the default soul), its inbox journal and
 * Idempotency-Key store, its usage ledger and its own MCP servers, and from
 * them its agent and compactor as every host composes them
 * (Agent.makeFromPorts). All of it lives in the instance's scope.
 */
import * as path from "node:path"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Agent from "../../agent/Agent.js"
import * as Compactor from "../../agent/Compactor.js"
import { ParsedAgentConfig } from "../../config/AgentConfig.js"
import * as EnsureWritable from "../../memory/EnsureWritable.js"
import * as FoldStore from "../../memory/FoldStore.js"
import * as Inbox from "../../memory/Inbox.js"
import * as Layout from "../../memory/Layout.js"
import * as Memory from "../../memory/Memory.js"
import * as MemoryHold from "../../memory/MemoryHold.js"
import { Brain } from "../../ports/Brain.js"
import { Claws } from "../../ports/Claws.js"
import * as ScheduleStore from "../../schedule/ScheduleStore.js"
import * as ScheduleTool from "../../schedule/ScheduleTool.js"
import { ParsedPrices } from "../../usage/Prices.js"
import * as UsageLedger from "../../usage/UsageLedger.js"
import * as AgentInbox from "./AgentInbox.js"
import type { Shared } from "./AgentInstanceService.js"
import * as AgentMcp from "./AgentMcp.js"
import * as AgentSettings from "./AgentSettings.js"
import { HostError } from "./HostError.js"
import * as IdempotencyStore from "./IdempotencyStore.js"

export interface Parts {
  /** The refusal of a message over the agent's own lower limit (its config.env); none without one. */
  readonly overOwnLimit: ((text: string) => HostError | undefined) | undefined
  /** Its journal, read as the instance answers: what it takes, lets go of, and what a previous run left. */
  readonly inbox: Inbox.FileInbox
  readonly idempotency: IdempotencyStore.IdempotencyStore
  readonly agent: Agent.AgentService
  readonly compactor: Compactor.CompactorService
  /** Closes its memory's, journal's and usage ledger's files (OpenFiles: reopened at its next message). */
  readonly closeFiles: Effect.Effect<void>
}

export const make = (options: {
  readonly id: string
  readonly directory: string
  readonly shared: Shared
  readonly fresh: boolean
}): Effect.Effect<Parts, HostError, Scope.Scope> =>
  Effect.gen(function*() {
    const { directory, fresh, id, shared } = options
    const unavailable = (message: string) => new HostError({ reason: "unavailable", id, message: `agent ${id}: ${message}` })
    const settings = yield* AgentSettings.forAgent(id, directory, shared.provider, shared.settings, fresh)
    const overOwnLimit = yield* AgentSettings.ownMessageLimit(id, settings, shared.settings)
    // Held while started: this process is then the only writer of the agent's journal and history.
    const ownerFile = shared.ownerFile()
    yield* MemoryHold.holdAgent(directory, ownerFile).pipe(Effect.mapError((error) => unavailable(error.message)))
    // A planted link or directory refuses the agent now, before a message is accepted (a run exits 1).
    if (!fresh) yield* Effect.mapError(Effect.fromResult(EnsureWritable.checkFiles(Layout.files(directory))), (error) => unavailable(error.message))
    // Without a soul.md of its own, the agent speaks with the host's default soul.
    const memory = yield* Memory.make(directory, { fallbackSoul: shared.defaultSoul, ownerFile, fresh })
    const inbox = yield* Inbox.make(directory, { fresh }).pipe(Effect.mapError((error) => unavailable(error.message)))
    const idempotency = yield* IdempotencyStore.open(directory, shared.idempotencyKeys, fresh).pipe(
      Effect.mapError((error) => unavailable(error.message))
    )
    // Keys not recorded yet held in the journal (AgentInbox.ts).
    const tracked = yield* AgentInbox.make(inbox, idempotency)
    // Every answer of its turns and compactions counted in its own usage.jsonl, as `run` counts them.
    const usage = shared.brainLabel === undefined
      ? { brain: shared.brain, closeFile: Effect.void }
      : yield* UsageLedger.recorder(shared.brain, path.join(directory, UsageLedger.FILE_NAME), shared.brainLabel)
    const brain = usage.brain
    // Its own mcp.json's servers beside the host's claws, held while it is started.
    const claws = yield* AgentMcp.clawsFor({ directory, base: shared.claws, pool: shared.mcpPool, fresh })
    const ports = Context.make(Memory.Memory, memory).pipe(
      Context.add(Inbox.Inbox, tracked),
      Context.add(Brain, brain),
      // The schedule tools beside the claws, on the agent's schedules.json (fired by ServeSchedules).
      Context.add(Claws, ScheduleTool.withScheduleTools(claws, {
        store: ScheduleStore.fileStore(ScheduleStore.fileIn(directory)),
        changed: Effect.void,
        defaultTo: "none",
        discord: false,
        terminal: false,
        // What the host would refuse of its message at every firing: its own limit, or the agent's lower one.
        maxMessageBytes: Math.min(settings.config.maxMessageBytes, shared.settings.config.maxMessageBytes)
      })),
      Context.add(FoldStore.FoldStore, FoldStore.make(memory.memoryDir))
    )
    // The agent as every host composes it (Agent.makeFromPorts), under the agent's own settings.
    const built = yield* Agent.makeFromPorts.pipe(
      Effect.provideContext(ports),
      Effect.provideService(ConfigProvider.ConfigProvider, settings.provider),
      // Parsed once already (AgentSettings, the host): not again by the agent and its compactor.
      Effect.provideService(ParsedAgentConfig, settings.config),
      Effect.provideService(ParsedPrices, shared.prices),
      Effect.mapError((error) => unavailable(String(error)))
    )
    const agent = Context.get(built, Agent.Agent)
    const compactor = Context.get(built, Compactor.Compactor)
    const closeFiles = Effect.andThen(memory.closeFiles, Effect.andThen(inbox.closeFiles, usage.closeFile))
    return { overOwnLimit, inbox, idempotency, agent, compactor, closeFiles } satisfies Parts
  })
