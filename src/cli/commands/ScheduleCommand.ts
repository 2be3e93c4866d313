/**
 * `planckclaw schedule add | list | remove`: an agent's schedule
 * (schedules.json in its memory directory, see src/schedule/), changed
 * beside a running `run` or `serve`, which fire its entries.
 */
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as SqlClient from "effect/sql/SqlClient"
import { numberOf } from "../../config/ConfigRange.js"
import { MaxMessageBytes } from "../../config/settings/Agent.js"
import { BotToken } from "../../config/settings/Discord.js"
import * as AgentId from "../../hosts/serve/AgentId.js"
import * as AgentSettings from "../../hosts/serve/AgentSettings.js"
import * as AgentStatus from "../../hosts/serve/AgentStatus.js"
import * as Memory from "../../memory/Memory.js"
import * as ScheduleEntry from "../../schedule/ScheduleEntry.js"
import * as ScheduleInput from "../../schedule/ScheduleInput.js"
import * as ScheduleStore from "../../schedule/ScheduleStore.js"
import { withSettings } from "../CliSettings.js"
import * as HelpText from "../HelpText.js"

const describe = (name: string) => HelpText.describe("schedule", name)
const agentOption = Flag.String("agent").pipe(Flag.optional, Flag.withDescription(describe("--agent")))
const optionalText = (name: string, help: string) => Flag.String(name).pipe(Flag.optional, Flag.withDescription(describe(help)))

/** The schedule file of `--agent ID` (under PLANCKCLAW_AGENTS_DIR, as serve hosts it), else of PLANCKCLAW_DIR. */
const fileOf = (agent: Option.Option<string>) =>
  Option.match(agent, {
    onNone: () => Effect.map(Memory.MemoryConfig, ScheduleStore.fileIn),
    onSome: (raw) => Effect.map(AgentStatus.existingAgent(raw), (agent) => ScheduleStore.fileIn(agent.directory))
  })

/** The PostgreSQL client and the cluster's schedules are loaded only with --cluster. */
const clusterModules = Effect.promise(() =>
  Promise.all([import("../../memory/sql/SqlDatabase.js"), import("../../hosts/cluster/ClusterSchedules.js")])
)

/**
 * `use` on the schedule the flags name: with --cluster, agent ID's row in
 * the cluster's database (PLANCKCLAW_DATABASE_URL); else a file (fileOf).
 */
const withStore = <A, E, R>(
  options: { readonly agent: Option.Option<string>; readonly cluster: boolean },
  use: (store: ScheduleStore.Store, where: string) => Effect.Effect<A, E, R>
) => {
  if (!options.cluster) return Effect.flatMap(fileOf(options.agent), (file) => use(ScheduleStore.fileStore(file), file))
  const agent = options.agent
  if (Option.isNone(agent)) return Effect.fail(refused("--cluster needs --agent ID: the cluster's schedules are its agents'"))
  return Effect.gen(function*() {
    const id = yield* Effect.fromResult(AgentId.parse(agent.value))
    const [database, cluster] = yield* clusterModules
    return yield* Effect.flatMap(SqlClient.SqlClient, (sql) => use(cluster.sqlStore(sql, id), `the cluster's schedule of agent ${id}`)).pipe(
      Effect.provide(database.layer)
    )
  })
}

const clusterOption = Flag.Boolean("cluster").pipe(Flag.withoutNegation, Flag.withDefault(false), Flag.withDescription(describe("--cluster")))

const refused = (message: string) => new ScheduleStore.ScheduleError({ reason: "Refused", message })

/** A discord: destination needs a Discord bot to deliver through: refused at once when none is configured. */
const checkDestination = (to: string) =>
  Effect.gen(function*() {
    const destination = yield* Effect.mapError(Effect.fromResult(ScheduleEntry.parseDestination(to)), refused)
    if (destination._tag !== "Discord") return
    const token = yield* Config.option(Config.Redacted(BotToken.key))
    if (Option.isNone(token)) {
      return yield* refused(
        `${to}: no Discord bot is configured (DISCORD_BOT_TOKEN), so nothing could deliver there; ` +
          "set it and run the agent with --bridge discord"
      )
    }
  })

/**
 * The PLANCKCLAW_MAX_MESSAGE_BYTES the entry's agent is held to: this home's
 * settings'; for an agent of serve (--agent without --cluster), its own
 * config.env's when lower, as serve holds it. A longer message is refused now.
 */
const messageLimit = (options: { readonly agent: Option.Option<string>; readonly cluster: boolean }) =>
  Effect.gen(function*() {
    const host = yield* numberOf(MaxMessageBytes)
    if (options.cluster || Option.isNone(options.agent)) return host
    const { directory, id } = yield* AgentStatus.existingAgent(options.agent.value)
    const provider = yield* AgentSettings.provider(id, directory, yield* ConfigProvider.ConfigProvider)
    return Math.min(host, yield* Effect.provideService(numberOf(MaxMessageBytes), ConfigProvider.ConfigProvider, provider))
  })

const nextText = (next: number | undefined) => next === undefined ? "none" : ScheduleEntry.formatInstant(next)

/** An entry's line in `list`: id, when, next run, last run, destination, text; and why its firings are refused, if they are. */
const line = (entry: ScheduleEntry.Entry, next: number | undefined, refused: string | undefined) =>
  `${entry.id}  ${ScheduleEntry.describeWhen(entry.when)}  next ${nextText(next)}` +
  `  last ${entry.lastRun ?? "never"}  to ${entry.to}  ${JSON.stringify(entry.text)}` +
  (refused === undefined ? "" : `  REFUSED: ${refused}`)

const addCommand = Command.make("add", {
  agent: agentOption,
  cluster: clusterOption,
  cron: optionalText("cron", "--cron"),
  tz: optionalText("tz", "--tz"),
  every: optionalText("every", "--every"),
  at: optionalText("at", "--at"),
  to: Flag.String("to").pipe(Flag.optional, Flag.withDescription(describe("--to"))),
  text: Argument.String("TEXT").pipe(Argument.withDescription("the message the agent receives"))
}, (options) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const when = yield* Effect.mapError(
      Effect.fromResult(ScheduleInput.parseWhen({
        cron: Option.getOrUndefined(options.cron),
        tz: Option.getOrUndefined(options.tz),
        every: Option.getOrUndefined(options.every),
        at: Option.getOrUndefined(options.at)
      }, now)),
      refused
    )
    if (Option.isSome(options.tz) && when._tag === "Every") return yield* refused("--tz goes with --cron or --at, not --every")
    // An agent of serve or the cluster has no terminal: its default is memory only, and `terminal` is refused.
    const to = Option.getOrElse(options.to, () => Option.isSome(options.agent) ? "none" : "terminal")
    if (Option.isSome(options.agent) && to === "terminal") {
      return yield* refused(`--to terminal: agent ${options.agent.value} is served by serve, which has no terminal (webhook:URL, discord:CHANNEL or none)`)
    }
    yield* checkDestination(to)
    const maxMessageBytes = yield* messageLimit(options)
    const entry = yield* withStore(options, (store) => store.modify(ScheduleStore.adding({ when, text: options.text, to }, now, maxMessageBytes)))
    yield* Console.log(`added ${entry.id}: ${ScheduleEntry.describeWhen(entry.when)}, next ${nextText(ScheduleEntry.nextOf(entry, now))}, to ${entry.to}`)
  }).pipe(withSettings(new Map()))).pipe(Command.withDescription("Add an entry: when it fires, where the reply goes, and TEXT."))

const listCommand = Command.make("list", {
  agent: agentOption,
  cluster: clusterOption,
  json: Flag.Boolean("json").pipe(Flag.withoutNegation, Flag.withDefault(false), Flag.withDescription(describe("--json")))
}, (options) =>
  Effect.gen(function*() {
    const entries = yield* withStore(options, (store) => store.read)
    const now = yield* Clock.currentTimeMillis
    // An entry written by hand (or before the limit was lowered) whose message the agent would refuse at every
    // firing is named here too, not only when it fires. A limit that cannot be read (a bad config.env) checks none.
    const limit = yield* Effect.orElseSucceed(messageLimit(options), () => undefined)
    const rows = entries.map((entry) => ({
      entry,
      next: ScheduleEntry.nextOf(entry, now),
      refused: limit === undefined ? undefined : ScheduleEntry.sizeProblem(entry, limit)
    }))
    if (options.json) {
      const json = rows.map(({ entry, next, refused }) => ({ ...entry, next: next === undefined ? null : ScheduleEntry.formatInstant(next), refused: refused ?? null }))
      return yield* Console.log(JSON.stringify(json, null, 2))
    }
    yield* Console.log(rows.length === 0 ? "no schedule entries" : rows.map(({ entry, next, refused }) => line(entry, next, refused)).join("\n"))
  }).pipe(withSettings(new Map()))).pipe(Command.withDescription("List the entries, each with its next and last run."))

const removeCommand = Command.make("remove", {
  agent: agentOption,
  cluster: clusterOption,
  id: Argument.String("ID").pipe(Argument.withDescription("the entry's id, as list shows it"))
}, (options) =>
  Effect.gen(function*() {
    const removed = yield* withStore(options, (store, where) => store.modify(ScheduleStore.removing(options.id, where)))
    yield* Console.log(`removed ${removed.id}: ${ScheduleEntry.describeWhen(removed.when)} ${JSON.stringify(removed.text)}`)
  }).pipe(withSettings(new Map()))).pipe(Command.withDescription("Remove the entry ID."))

export const schedule = Command.make("schedule").pipe(
  Command.withDescription(HelpText.summary("schedule")),
  Command.withSubcommands([addCommand, listCommand, removeCommand])
)


