/**
 * `run`'s schedule (issue 51, docs/schedules.md): the entries of its memory
 * directory's schedules.json fired into the agent beside the bridge's
 * messages, their replies sent to the run's terminal (the cli bridge), a
 * Discord channel (the discord bridge), a webhook, or kept in memory only;
 * and the schedule tools offered to the model beside the claws.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Latch from "effect/Latch"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { numberOf } from "../../config/ConfigRange.js"
import { MaxMessageBytes } from "../../config/settings/Agent.js"
import { ChannelId } from "../../config/settings/Discord.js"
import * as MemoryFiles from "../../memory/MemoryFiles.js"
import { Claws } from "../../ports/Claws.js"
import type { InteractService } from "../../ports/Interact.js"
import { CHANNEL as TERMINAL_CHANNEL } from "../../interact/TerminalInteract.js"
import * as ScheduledInteract from "../../schedule/ScheduledInteract.js"
import * as ScheduleRunner from "../../schedule/ScheduleRunner.js"
import * as ScheduleStore from "../../schedule/ScheduleStore.js"
import * as ScheduleTool from "../../schedule/ScheduleTool.js"

/** The agent's name in a webhook's body, for the one agent of `run`. */
export const AGENT_NAME = "run"

/** How often the file is read again for entries another process added (`planckclaw schedule add`). */
const POLL_MS = 2000

/** The run's schedule: where it delivers, and the latch the tool wakes its runner with. */
export interface RunSchedule {
  readonly bridge: string
  readonly wake: Latch.Latch
}

export const make = (bridge: string): Effect.Effect<RunSchedule> => Effect.map(Latch.make(false), (wake) => ({ bridge, wake }))

/** The run's Claws with the schedule tools beside the claws' own: what the agent is given. */
export const claws = (schedule: RunSchedule): Layer.Layer<Claws, Config.ConfigError, Claws> =>
  Layer.effect(
    Claws,
    Effect.gen(function*() {
      const inner = yield* Claws
      const file = ScheduleStore.fileIn(yield* MemoryFiles.MemoryConfig)
      // On Discord, what the model schedules answers in the bridge's (first) channel unless it names another.
      const channels = schedule.bridge === "discord" ? yield* Config.option(Config.String(ChannelId.key)) : Option.none()
      const firstChannel = Option.flatMap(channels, (ids) => Option.fromNullishOr(ids.split(",").map((id) => id.trim()).find((id) => id !== "")))
      return ScheduleTool.withScheduleTools(inner, {
        store: ScheduleStore.fileStore(file),
        changed: Effect.asVoid(schedule.wake.open),
        defaultTo: schedule.bridge === "discord" ? Option.match(firstChannel, { onNone: () => "none", onSome: (id) => `discord:${id}` }) : "terminal",
        discord: schedule.bridge === "discord",
        // Only the terminal bridge prints a reply (interact's routes below).
        terminal: schedule.bridge === "cli",
        maxMessageBytes: yield* numberOf(MaxMessageBytes)
      })
    })
  )

/** `near` (the run's interact, on the pipes) with the schedule fired into it, for the scope. */
export const interact = (schedule: RunSchedule, near: InteractService) =>
  Effect.gen(function*() {
    const file = ScheduleStore.fileIn(yield* MemoryFiles.MemoryConfig)
    const graceMs = yield* ScheduleRunner.GraceConfig
    const scheduled = yield* ScheduledInteract.withSchedule(near, {
      file,
      graceMs,
      pollMs: POLL_MS,
      wake: schedule.wake,
      maxMessageBytes: yield* numberOf(MaxMessageBytes),
      routes: {
        agent: AGENT_NAME,
        terminal: schedule.bridge === "cli" ? (text) => near.send({ channel: TERMINAL_CHANNEL, text }) : undefined,
        discord: schedule.bridge === "discord" ? (channel, text) => near.send({ channel, text }) : undefined
      }
    })
    return scheduled.interact
  })
