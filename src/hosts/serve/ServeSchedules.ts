/**
 * `serve` fires the schedules of its agents (docs/schedules.md): each agent
 * directory holding a schedules.json gets a runner (ScheduleRunner), found
 * by a look at PLANCKCLAW_AGENTS_DIR every few seconds. A firing is a
 * message to the agent through the host, as an HTTP message would be (its
 * turn journaled, stored, compacted, counted), under an idempotency key of
 * the entry and occurrence, so one occurrence sent twice is answered once;
 * the reply goes to a webhook or stays in memory (serve has no terminal,
 * Discord channels get theirs over REST with the bot's token).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as FiberSet from "effect/FiberSet"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import { numberOf } from "../../config/ConfigRange.js"
import { MaxMessageBytes } from "../../config/settings/Agent.js"
import * as ScheduleDelivery from "../../schedule/ScheduleDelivery.js"
import { type Entry, sizeProblem } from "../../schedule/ScheduleEntry.js"
import * as ScheduleRunner from "../../schedule/ScheduleRunner.js"
import * as ScheduleStore from "../../schedule/ScheduleStore.js"
import * as AgentHost from "./AgentHost.js"
import * as AgentId from "./AgentId.js"
import * as AgentSettings from "./AgentSettings.js"
import * as ScheduleDiscord from "./ScheduleDiscord.js"

/** How often the agents' directory and each schedule file are looked at again. */
export const POLL_MS = 5000

/** The ids of the agents with a schedule file. */
const scheduledAgents = (agentsDir: string): ReadonlyArray<string> =>
  Result.getOrElse(Result.try(() => fs.readdirSync(agentsDir)), () => [] as Array<string>).filter((name) =>
    AgentId.is(name) && fs.existsSync(ScheduleStore.fileIn(path.join(agentsDir, name))))

/** Fires the schedules of every agent of the host, until interrupted. */
export const run = (options: { readonly pollMs?: number } = {}) =>
  Effect.scoped(Effect.gen(function*() {
    const host = yield* AgentHost.AgentHost
    const graceMs = yield* ScheduleRunner.GraceConfig
    const pollMs = options.pollMs ?? POLL_MS
    // Discord channels get their replies over REST with the bot's token, when there is one (ScheduleDiscord).
    const discord = yield* ScheduleDiscord.make
    const runners = yield* FiberMap.make<string>()
    const turns = yield* FiberSet.make()
    const answering = ScheduleRunner.oneAtATime()
    const answer = (id: string, entry: Entry, occurrenceMs: number) =>
      Effect.gen(function*() {
        yield* Effect.logInfo(`schedule ${entry.id} of agent ${id}: firing for ${new Date(occurrenceMs).toISOString()}`)
        const reply = yield* host.send(id, {
          text: ScheduleDelivery.messageOf(entry),
          channel: `schedule/${entry.id}`,
          idempotencyKey: `schedule-${entry.id}-${occurrenceMs}`
        })
        yield* ScheduleDelivery.deliverTo({ agent: id, discord }, entry.id, entry.to, reply.reply)
      }).pipe(Effect.catch((error) => Effect.logError(`schedule ${entry.id} of agent ${id}: ${error.message}`)))
    const hostLimit = yield* numberOf(MaxMessageBytes)
    const hostProvider = yield* ConfigProvider.ConfigProvider
    // The agent's own config.env may lower the host's limit, as its messages are held to (AgentSettings.ownMessageLimit);
    // one that cannot be read is its start's to refuse, not the schedule's.
    const messageLimitOf = (id: string) =>
      AgentSettings.provider(id, path.join(host.directory, id), hostProvider).pipe(
        Effect.flatMap((provider) => Effect.provideService(numberOf(MaxMessageBytes), ConfigProvider.ConfigProvider, provider)),
        Effect.map((own) => Math.min(own, hostLimit)),
        Effect.orElseSucceed(() => hostLimit)
      )
    const start = (id: string) =>
      Effect.flatMap(
        Effect.flatMap(messageLimitOf(id), (limit) => ScheduleRunner.make({
          store: ScheduleRunner.fromStore(ScheduleStore.fileStore(ScheduleStore.fileIn(path.join(host.directory, id)))),
          graceMs,
          pollMs,
          refusedMessage: (entry) => sizeProblem(entry, limit),
          // The turn runs beside the runner: a long one holds back no other entry, and skips its own next runs.
          fire: (entry, occurrenceMs) =>
            FiberSet.run(turns, answering(`${id}/${entry.id}`, `${entry.id} of agent ${id}`, occurrenceMs, answer(id, entry, occurrenceMs)), {
              startImmediately: true
            }).pipe(Effect.asVoid)
        })),
        (runner) => FiberMap.run(runners, id, runner.run, { onlyIfMissing: true })
      )
    const look = Effect.suspend(() =>
      Effect.forEach(scheduledAgents(host.directory), start, { discard: true })
    )
    return yield* Effect.repeat(look, Schedule.spaced(pollMs)).pipe(Effect.andThen(Effect.never))
  }))
