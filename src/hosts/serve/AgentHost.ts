/**
 * Many agents in one process. An agent is a directory under
 * PLANCKCLAW_AGENTS_DIR named by its id; it is started on its first message
 * and released after PLANCKCLAW_AGENT_IDLE without one (a LayerMap keyed by
 * id, each agent built by Agent.makeFromPorts inside AgentInstance). Agents run concurrently; brain calls in flight across all of them are
 * bounded by PLANCKCLAW_MAX_CONCURRENT_TURNS. Brain and Claws are shared,
 * with what else every agent shares (HostShared).
 * From start-up on, agents that left messages unanswered are found in the
 * background and started to answer them.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as LayerMap from "effect/LayerMap"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import type { Brain } from "../../ports/Brain.js"
import type { Claws } from "../../ports/Claws.js"
import * as Logging from "../../runtime/Logging.js"
import { errnoCode } from "../../runtime/Errors.js"
import * as AgentId from "./AgentId.js"
import * as AgentInstance from "./AgentInstance.js"
import type { Life } from "./AgentInstanceService.js"
import * as AgentRecords from "./AgentRecords.js"
import * as AgentStatus from "./AgentStatus.js"
import { AgentHost, type AgentHostService, awaitReply, type CompactResult, parseId, refuse } from "./AgentHostService.js"
import type { HostError } from "./HostError.js"
import { HostConfig } from "./HostConfig.js"
import * as HostMessage from "./HostMessage.js"
import * as HostShared from "./HostShared.js"
import * as TurnStream from "./TurnStream.js"

export type { AgentInfo, AgentList, ListPage } from "./AgentStatus.js"
export type { Reply } from "./AgentInstance.js"
export { HostError } from "./HostError.js"
export { HostConfig } from "./HostConfig.js"
export { AgentHost, type AgentHostService, awaitReply, type CompactResult, parseId, refuse } from "./AgentHostService.js"
// What the service's members take and answer, so an embedder can write their types.
export type { AllUsage, HistoryEntryAt, HistoryPage, MemoryText, Period } from "./AgentRecords.js"
export type { ScheduleList } from "./AgentSchedules.js"
export type { HostMessage } from "./HostMessage.js"
export type { Streaming, Told } from "./TurnStream.js"
export type { AgentDay as UsageAgentDay, Report as UsageReport, Totals as UsageTotals } from "../../usage/UsageReport.js"
export type { Activity } from "../../runtime/process/IdleCollection.js"

/**
 * Messages being accepted at once: their agent started if it was not, the
 * message journaled and queued. That is synchronous work on the one thread
 * (directories, locks, files), so a few at a time keep it busy; more only
 * interleave them.
 */
const ACCEPTS_AT_ONCE = 8

export type { SendOptions } from "./HostMessage.js"

export const make = Effect.gen(function*() {
  const config = yield* HostConfig
  // What every agent shares, made once (HostShared): the agents directory checked before any agent starts.
  const shared = yield* HostShared.make
  const { defaultSoul, prices } = shared
  // Messages are accepted a few at a time, in the order they came. Ten thousand accepted all at once
  // would share the thread step by step, each step of each waiting behind the same step of all the
  // others, and the first reply would come only when the last message had been journaled; this way
  // the first agents answer while later messages are still being accepted.
  const accepting = yield* Semaphore.make(ACCEPTS_AT_ONCE)
  const scope = yield* Effect.scope
  const hostContext = yield* Effect.context<never>()
  const running = new Set<string>()
  const activity = { accepted: 0, released: 0 }
  // The newest instance of each agent, until its scope has closed.
  const lives = new Map<string, Life>()
  const directoryOf = (id: AgentId.AgentId) => path.join(config.agentsDir, id)

  const start = (id: AgentId.AgentId) =>
    Effect.gen(function*() {
      // An instance released while its compaction runs closes only once that is done; a message meanwhile
      // starts the next instance after it, never beside it (the two would share the agent's files). One
      // restarting after a defect still has callers holding it: the next waits for its background work only,
      // and takes over the messages it had not answered, with their callers.
      const before = lives.get(id)
      if (before !== undefined && !before.restarting) yield* Deferred.await(before.closed)
      const handedOver = before?.restarting === true ? yield* Effect.andThen(before.quiet, before.handOver) : []
      return yield* startAfter(id, handedOver).pipe(
        // The journal keeps their messages for a later start; their callers hear back now rather than never.
        Effect.onError(() =>
          Effect.forEach(handedOver, (left) => TurnStream.answer(left, TurnStream.FAILED), { discard: true })
        )
      )
    }).pipe(Effect.annotateLogs("agent", id), Logging.toStderr)

  const startAfter = (id: AgentId.AgentId, handedOver: ReadonlyArray<AgentInstance.Waiting>) =>
    Effect.gen(function*() {
      const life: Life = {
        closed: yield* Deferred.make<void>(),
        restarting: false,
        closing: false,
        quiet: Effect.void,
        handOver: Effect.succeed([])
      }
      lives.set(id, life)
      // Registered before the instance is made: it runs after all of the instance's own finalizers.
      yield* Effect.addFinalizer(() =>
        Effect.andThen(
          Effect.sync(() => lives.get(id) === life && lives.delete(id)),
          Deferred.succeed(life.closed, undefined)
        )
      )
      const directory = directoryOf(id)
      // One mkdir(2) for a new agent; an existing one is checked to be a directory, not a link or a file.
      const made = Result.try(() => fs.mkdirSync(directory, { mode: 0o700 }))
      const existing = Result.isFailure(made) && errnoCode(made.failure) === "EEXIST" ? AgentStatus.directoryStatus(directory) : undefined
      if (Result.isFailure(made) && existing === undefined) {
        return yield* refuse("unavailable", `${directory} is not a directory this process can use (a link, a file, or unwritable)`, id)
      }
      // Made by the mkdir above: a new agent's start looks for none of the files it cannot have yet,
      // and its directory is ours, mode 0700 or less (the umask only takes bits away).
      const fresh = Result.isSuccess(made)
      if (!fresh) yield* AgentStatus.warnIfOthersCanWrite(`agent directory ${directory}`, directory, "this agent's", existing)
      running.add(id)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          running.delete(id)
          activity.released++
        }))
      const instance = yield* AgentInstance.make({ id, directory, shared, handedOver, restart: restart(id, life), fresh })
      life.quiet = instance.quiet
      life.handOver = instance.handOver
      // Added last, run first when the scope closes.
      yield* Effect.addFinalizer(() => Effect.sync(() => {
        life.closing = true
      }))
      return instance
    })

  // The agents by id, each built by its own layer (a fresh one per start: the map memoizes layers by reference).
  const agents = yield* LayerMap.make((id: AgentId.AgentId) => Layer.effect(AgentInstance.Instance, start(id)), {
    idleTimeToLive: Duration.millis(Math.round(config.idleSeconds * 1000))
  })

  // The map keeps a failed start like a started agent until its idle time passes:
  // forgotten at once, so the next message tries again (the other process
  // holding the agent has stopped, its config.env was mended).
  const started = (id: AgentId.AgentId) =>
    agents.contextEffect(id).pipe(
      // In the host's context, not the first caller's (the map merges it in, the agent would keep an HTTP request's).
      Effect.updateContext((caller: Context.Context<Scope.Scope>) => Context.add(hostContext, Scope.Scope, Context.get(caller, Scope.Scope))),
      Effect.map((context) => Context.get(context, AgentInstance.Instance)),
      Effect.tapError(() => agents.invalidate(id))
    )

  /** Holds agent `id` started until the messages it recovered are answered. */
  const answerRecovered = (id: AgentId.AgentId) =>
    Effect.scoped(
      Effect.flatMap(started(id), (instance) => Effect.forEach(instance.recovered, Deferred.await, { discard: true }))
    ).pipe(
      Effect.catch((error) => Effect.logError(`agent ${id} could not answer what it left unanswered: ${error.message}`)),
      Effect.forkIn(scope),
      Effect.asVoid
    )

  // A defect escaped a message: a fresh instance reads the journal and answers what was queued.
  function restart(id: AgentId.AgentId, life: Life): Effect.Effect<void> {
    return Effect.sync(() => {
      life.restarting = true
    }).pipe(Effect.andThen(agents.invalidate(id)), Effect.andThen(answerRecovered(id)))
  }

  const existing = (raw: string) =>
    Effect.flatMap(parseId(raw), (id) =>
      AgentStatus.isAgentDirectory(directoryOf(id)) ? Effect.succeed(id) : refuse("not-found", `no agent ${id}`, id))

  /**
   * Holds agent `id` started until `reply` is given, in the host's scope: taken as the message is accepted,
   * while its caller still holds the agent, so it is never idle between the two. A caller gone (a client
   * disconnected) would otherwise let its idle time pass mid-turn, and the release cut the turn, to be run
   * again from the journal at its next start.
   */
  const holdUntilAnswered = (id: AgentId.AgentId, reply: Deferred.Deferred<AgentInstance.Reply>) =>
    Effect.gen(function*() {
      const held = yield* Scope.make()
      const holding = yield* Effect.exit(Scope.provide(started(id), held))
      if (Exit.isFailure(holding)) return yield* Scope.close(held, Exit.void)
      yield* Effect.forkIn(Effect.ensuring(Deferred.await(reply), Scope.close(held, Exit.void)), scope)
    })

  /** Submits, retrying when it reached an instance stopping after a defect. */
  const submit = (id: AgentId.AgentId, message: AgentInstance.Message, events?: AgentInstance.EventSink) =>
    Effect.gen(function*() {
      for (let attempt = 0; attempt < 5; attempt++) {
        // An instance still closing (its compaction settling) is waited for here, holding no permit.
        const before = lives.get(id)
        if (before !== undefined && before.closing && !before.restarting) yield* Deferred.await(before.closed)
        const submitted = yield* Effect.flatMap(started(id), (instance) =>
          instance.submit(message, events).pipe(
            Effect.tap((accepted) => Option.isSome(accepted) ? holdUntilAnswered(id, accepted.value) : Effect.void),
            Effect.uninterruptible
          )).pipe(
          // A permit passes straight to the next message waiting: without a yield here, every message
          // would be accepted before any agent's turn began.
          Effect.tap(() => Effect.yieldNow),
          accepting.withPermits(1)
        )
        if (Option.isSome(submitted)) {
          activity.accepted++
          return submitted.value
        }
      }
      return yield* refuse("unavailable", `agent ${id} keeps restarting`, id)
    })

  const check = HostMessage.decoder(config.maxMessageBytes)
  const acceptChecked = ({ id, ...message }: HostMessage.HostMessage) => submit(id, message)

  // submit holds the agent started until the reply is given, whether its caller waits for it or goes away.
  const sendChecked = (message: HostMessage.HostMessage) => Effect.flatMap(Effect.scoped(acceptChecked(message)), awaitReply)
  const streamChecked = ({ id, ...message }: HostMessage.HostMessage) =>
    TurnStream.streaming((events) => submit(id, message, events), awaitReply)

  const statusReader = AgentStatus.makeReader(prices)
  const status = (id: AgentId.AgentId) => statusReader.read(id, directoryOf(id), running.has(id))

  const agentIds = Effect.suspend(() => {
    const names = Result.try(() => fs.readdirSync(config.agentsDir))
    return Result.isFailure(names)
      ? refuse("unavailable", `cannot list ${config.agentsDir}: ${String(names.failure)}`)
      : Effect.succeed(names.success.filter(AgentId.is).sort())
  })
  const list = (page: AgentStatus.ListPage) =>
    Effect.flatMap(agentIds, (ids) => statusReader.readPage(ids, page, directoryOf, (id) => running.has(id)))
  const records = AgentRecords.forHost({ existing, agentIds, directoryOf, prices, hostSoul: defaultSoul })

  const compact = (raw: string) =>
    Effect.gen(function*() {
      const id = yield* existing(raw)
      const report = yield* Effect.scoped(Effect.flatMap(started(id), (instance) => instance.compactNow)).pipe(
        Effect.catchTags({
          CompactionBusy: (busy) => refuse("busy", `agent ${id} is being compacted by process ${busy.ownerPid}`, id),
          CompactionFailed: (failed) => refuse("failed", `agent ${id}: ${failed.message}`, id),
          MemoryError: (failed) => refuse("failed", `agent ${id}: ${failed.message}`, id)
        })
      )
      return Option.match(report, {
        onNone: (): CompactResult => ({ compacted: false, summarised: 0, kept: status(id).historyLines, summaryBytes: status(id).summaryBytes }),
        onSome: (done): CompactResult => ({ compacted: true, summarised: done.summarised, kept: done.kept, summaryBytes: done.summaryBytes })
      })
    })

  // Messages a previous run accepted and did not answer are answered now, not at the agent's next message.
  // Found in the background, a step at a time, so the host is up at once however many agents there are;
  // a message meanwhile to an agent not yet found starts it, and its start answers what it left first.
  yield* Effect.tryPromise(() => fs.promises.readdir(config.agentsDir)).pipe(
    Effect.catch((error) =>
      Effect.as(Effect.logWarning(`cannot list ${config.agentsDir} for messages left unanswered: ${String(error.cause)}`), [] as Array<string>)
    ),
    Effect.flatMap((names) => AgentStatus.forEachUnanswered(names.filter(AgentId.is), directoryOf, answerRecovered)),
    Effect.tap((found) => found > 0 ? Effect.logInfo(`${found} agent(s) had left messages unanswered; answering them`) : Effect.void),
    Effect.forkIn(scope)
  )

  return {
    directory: config.agentsDir,
    activity: () => ({ ...activity }),
    sendChecked,
    streamChecked,
    send: (raw, options) => Effect.flatMap(check(raw, options), sendChecked),
    accept: (raw, options) => Effect.flatMap(check(raw, options), acceptChecked),
    list,
    get: (raw) => Effect.map(existing(raw), status),
    compact,
    // Only a started agent has a turn to cancel: a released one is not started for it.
    cancel: (raw, key) =>
      Effect.flatMap(existing(raw), (id) =>
        running.has(id) ? Effect.scoped(Effect.flatMap(started(id), (instance) => instance.cancel(key))) : Effect.succeed(false)),
    ...records
  } satisfies AgentHostService
})

/** The host; Brain and Claws are provided once and shared by every agent. */
export const layer: Layer.Layer<AgentHost, Config.ConfigError | HostError, Brain | Claws> = Layer.effect(AgentHost, Logging.toStderr(make))
