/**
 * What catch-up must not forget: messages Discord would not list at the
 * start (503 on the history read) are fetched once it answers, before the
 * channel's newer ones, and the catch-up state does not move past them
 * meanwhile; and messages read over REST, which name no server, are given
 * their channel's. Time under TestClock.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, References, Stream } from "effect"
import { TestClock } from "effect/testing"
import { snowflakeAt } from "../../../src/interact/discord/CatchUp.js"
import * as ChannelKinds from "../../../src/interact/discord/ChannelKinds.js"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import * as DiscordRest from "../../../src/interact/discord/DiscordRest.js"
import type { DiscordSettings } from "../../../src/interact/discord/Settings.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { captureLogs } from "../../support/LogCapture.js"
import { advanceTo } from "../../support/TestClockWait.js"

const { token, botUserId, guildId, channelA, channelB, alice } = FakeDiscord.ids

const unavailable = { status: 503, body: { message: "Service Unavailable" } }

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-discord-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const take = <A, E>(messages: Stream.Stream<A, E>, count: number) =>
  messages.pipe(Stream.take(count), Stream.runCollect)

const historyReads = (fake: FakeDiscord.FakeDiscord, channel: string) =>
  fake.rest().filter((record) => record.method === "GET" && record.path === `/api/v10/channels/${channel}/messages`)

const checkpointIn = (dir: string, channel: string): string | undefined => {
  const file = path.join(dir, "discord-catch-up.json")
  return fs.existsSync(file)
    ? (JSON.parse(fs.readFileSync(file, "utf8")) as { channels: Record<string, string> }).channels[channel]
    : undefined
}

const settingsFor = (fake: FakeDiscord.FakeDiscord): DiscordSettings => FakeDiscord.settingsFor(fake, { channelIds: [channelA] })

/** A bridge that handled one message and stopped, and messages sent in `channel` while it was away. */
const stoppedAfterOne = (fake: FakeDiscord.FakeDiscord, dir: string) =>
  Effect.gen(function*() {
    const seen = yield* Effect.scoped(Effect.gen(function*() {
      const bridge = yield* Discord.connect(settingsFor(fake), { stateDirectory: dir })
      const id = yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "seen" })
      // Held durably by whoever took it (a run's note, serve's): catch-up may pass it.
      yield* Effect.forEach(yield* take(bridge.messages, 1), bridge.held)
      return id
    }))
    for (const text of ["missed 1", "missed 2"]) {
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: text, dispatch: false })
    }
    return seen
  })

describe("Discord catch-up: a history read that fails", () => {
  it.effect("is tried again until Discord answers; the channel's newer message waits for it, and the state stays put", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const logs = yield* captureLogs
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      const seen = yield* stoppedAfterOne(fake, dir)
      // discord.js tries a 5xx twice: two 503s are one failed read. Two failed reads: the start's, the live message's.
      yield* fake.script("GET", new RegExp(`/channels/${channelA}/messages$`), Array.from({ length: 4 }, () => unavailable))
      const started = yield* Clock.currentTimeMillis
      const bridge = yield* Discord.connect(settingsFor(fake), { stateDirectory: dir }).pipe(Effect.provide(logs.layer))
      expect(yield* logs.waitFor(/could not be fetched/)).toContain("503")

      const live = yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "live during the outage" })
      yield* fake.waitFor(() => historyReads(fake, channelA).length >= 4 ? true : undefined)
      // Nothing moved past the messages Discord has not listed yet.
      expect(checkpointIn(dir, channelA)).toBe(seen)

      // Discord answers again: the retry fetches the gap, the live message with it, in order.
      yield* advanceTo(started + 1_000)
      const got = yield* take(bridge.messages, 3)
      expect(got.map((message) => message.text)).toEqual(["missed 1", "missed 2", "live during the outage"])
      // Read over REST, yet in the channel's server, as the live one.
      expect(got.map((message) => message.guildId)).toEqual([guildId, guildId, guildId])
      yield* Effect.forEach(got, bridge.held)
      expect(checkpointIn(dir, channelA)).toBe(live)
      expect(historyReads(fake, channelA).map((record) => record.status)).toEqual([503, 503, 503, 503, 200])
    }))

  it.effect("is fetched with the channel's next message once Discord answers again", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const logs = yield* captureLogs
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      yield* stoppedAfterOne(fake, dir)
      yield* fake.script("GET", new RegExp(`/channels/${channelA}/messages$`), [unavailable, unavailable])
      const bridge = yield* Discord.connect(settingsFor(fake), { stateDirectory: dir }).pipe(Effect.provide(logs.layer))
      yield* logs.waitFor(/could not be fetched/)
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "Discord is back" })
      const got = yield* take(bridge.messages, 3)
      expect(got.map((message) => message.text)).toEqual(["missed 1", "missed 2", "Discord is back"])
    }))
})

describe("Discord catch-up: a history read Discord rate-limits for long", () => {
  /** A 429 asking for `seconds`, for this bucket only. */
  const rateLimited = (seconds: number) => ({
    status: 429,
    headers: { "retry-after": String(seconds), "x-ratelimit-scope": "user" },
    body: { message: "You are being rate limited.", retry_after: seconds, global: false }
  })
  /** discord.js adds its 50 ms offset to Retry-After. */
  const offset = 50

  it.effect("is logged once, saying how long; the messages are fetched, none dropped, once the wait is over", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const logs = yield* captureLogs
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      const seen = yield* stoppedAfterOne(fake, dir)
      yield* fake.script("GET", new RegExp(`/channels/${channelA}/messages$`), [rateLimited(600)])
      const started = yield* Clock.currentTimeMillis
      const bridge = yield* Discord.connect(settingsFor(fake), { stateDirectory: dir }).pipe(
        Effect.provide(logs.layer),
        // The debug line that says a live message waits for the gap.
        Effect.provideService(References.MinimumLogLevel, "Debug")
      )
      const warning = yield* logs.waitFor(/could not be fetched/)
      expect(warning).toContain("rate limited by Discord for 601 s")

      // A live message meanwhile waits with the gap, and asks Discord nothing before the wait is over.
      const live = yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "live during the wait" })
      yield* logs.waitFor(new RegExp(`${live} waits for the gap`))
      expect(historyReads(fake, channelA).map((record) => record.status)).toEqual([429])
      expect(checkpointIn(dir, channelA)).toBe(seen)

      yield* advanceTo(started + 600_000 + offset)
      const got = yield* take(bridge.messages, 3)
      expect(got.map((message) => message.text)).toEqual(["missed 1", "missed 2", "live during the wait"])
      expect(historyReads(fake, channelA).map((record) => record.status)).toEqual([429, 200])
      expect(logs.lines.filter((line) => line.startsWith("WARN") && line.includes("rate limited"))).toHaveLength(1)
    }))
})

describe("Discord catch-up: threads", () => {
  it.effect("catches up a thread made under a configured channel while the bridge was away", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      yield* stoppedAfterOne(fake, dir)
      const thread = yield* fake.createThread(channelA, { announce: false })
      for (const text of ["in the new thread 1", "in the new thread 2"]) {
        yield* fake.messageCreate({ channelId: thread, authorId: alice, content: text, dispatch: false })
      }
      const bridge = yield* Discord.connect(settingsFor(fake), { stateDirectory: dir })
      const got = yield* take(bridge.messages, 4)
      expect(got.filter((message) => message.channel === channelA).map((message) => message.text)).toEqual(["missed 1", "missed 2"])
      expect(got.filter((message) => message.channel === thread).map((message) => [message.kind, message.guildId, message.text]))
        .toEqual([
          ["thread", guildId, "in the new thread 1"],
          ["thread", guildId, "in the new thread 2"]
        ])
      // Known from here on: its next message needs no lookup, and is answered once.
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "live in the thread" })
      expect((yield* take(bridge.messages, 1)).map((message) => message.text)).toEqual(["live in the thread"])
      expect(fake.rest().filter((record) => record.method === "GET" && record.path === `/api/v10/channels/${thread}`)).toEqual([])
    }))

  it.effect("leaves alone a thread that was there before the bridge first started", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      const thread = yield* fake.createThread(channelA, { announce: false })
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "before the bot", dispatch: false })
      const bridge = yield* Discord.connect(settingsFor(fake), { stateDirectory: dir })
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "after the start" })
      expect((yield* take(bridge.messages, 1)).map((message) => message.text)).toEqual(["after the start"])
    }))
})

describe("Discord catch-up: the server of a channel, which messages read over REST do not name", () => {
  const lookupsOf = (fake: FakeDiscord.FakeDiscord, channel: string) =>
    fake.rest().filter((record) => record.method === "GET" && record.path === `/api/v10/channels/${channel}`)

  it.effect("is learnt from a GUILD_CREATE's own id, else looked up once; none for a channel Discord will not show", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA], hiddenChannelIds: [channelB] })
      const rest = yield* DiscordRest.make(fake.apiUrl, token)
      const kinds = ChannelKinds.make({ ...settingsFor(fake), channelIds: [channelA, channelB] }, rest)
      // GUILD_CREATE lists its channels without their guild_id, as Discord does.
      yield* kinds.learnThreadsOf({ id: guildId, channels: [{ id: channelA, type: 0 }], threads: [] })
      expect(yield* kinds.guildOf(channelA)).toBe(guildId)
      expect(lookupsOf(fake, channelA)).toEqual([])
      // A thread known without its server: looked up at the first need, then known.
      const thread = yield* fake.createThread(channelA, { announce: false })
      yield* kinds.learn({ id: thread, type: 11, parent_id: channelA })
      expect(yield* kinds.guildOf(thread)).toBe(guildId)
      expect(yield* kinds.guildOf(thread)).toBe(guildId)
      expect(lookupsOf(fake, thread).map((record) => record.status)).toEqual([200])
      expect(yield* kinds.guildOf(channelB)).toBeUndefined()
    }))
})

describe("Discord catch-up state: moved only past what is held", () => {
  it.effect("stays before a message handed on until its taker holds it; messages not handed on pass once all before are held", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      const bridge = yield* Discord.connect(settingsFor(fake), { stateDirectory: dir })
      yield* fake.waitFor(() => checkpointIn(dir, channelA))
      const first = yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "first" })
      yield* fake.messageCreate({ channelId: channelA, authorId: botUserId, content: "a bot's own", bot: true })
      const second = yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "second" })
      const [one, two] = yield* take(bridge.messages, 2)
      // Just before "first": a kill now fetches it again, and what follows.
      const beforeFirst = String(BigInt(first) - 1n)
      expect(checkpointIn(dir, channelA)).toBe(beforeFirst)
      yield* bridge.held(two!)
      expect(checkpointIn(dir, channelA)).toBe(beforeFirst)
      yield* bridge.held(one!)
      expect(checkpointIn(dir, channelA)).toBe(second)
    }))
})

describe("Discord catch-up of direct messages", () => {
  const dmChannel = "300000000000000077"
  const millisOf = (snowflake: string) => Number(BigInt(snowflake) >> 22n) + 1_420_070_400_000

  // Nothing else finds a conversation with new messages: Discord lists no bot's direct messages, and a
  // session's GUILD_CREATE lists active threads only. Its entry, however old, must stay.
  it.effect("still catches up a direct message sent while away, after a conversation quiet longer than the window", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      const missed = yield* fake.messageCreate({ channelId: dmChannel, authorId: alice, content: "while away", direct: true, dispatch: false })
      // The bridge last handled a message there three days before; the window is one hour.
      const now = millisOf(missed) + 60_000
      yield* TestClock.setTime(now)
      const quietSince = snowflakeAt(now - 3 * 24 * 3_600_000)
      fs.writeFileSync(path.join(dir, "discord-catch-up.json"), JSON.stringify({ version: 1, channels: { [dmChannel]: quietSince } }))
      const bridge = yield* Discord.connect(
        { ...settingsFor(fake), directMessages: true, catchUp: { messages: 50, hours: 1 } },
        { stateDirectory: dir }
      )
      const got = yield* take(bridge.messages, 1)
      expect(got.map((message) => [message.channel, message.kind, message.text])).toEqual([[dmChannel, "direct", "while away"]])
    }))

  it.effect("looks a conversation up once per process, not at every new session", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      const bridge = yield* Discord.connect({ ...settingsFor(fake), directMessages: true }, { stateDirectory: dir })
      yield* fake.messageCreate({ channelId: dmChannel, authorId: alice, content: "hello", direct: true })
      yield* Effect.forEach(yield* take(bridge.messages, 1), bridge.held)
      for (const session of [2, 3]) {
        yield* fake.invalidateSession(false)
        yield* fake.messageCreate({ channelId: dmChannel, authorId: alice, content: `missed before session ${session}`, direct: true, dispatch: false })
        yield* TestClock.adjust("6 seconds")
        const got = yield* take(bridge.messages, 1)
        expect(got.map((message) => [message.channel, message.text])).toEqual([[dmChannel, `missed before session ${session}`]])
        yield* Effect.forEach(got, bridge.held)
      }
      const lookups = fake.rest().filter((record) => record.method === "GET" && record.path === `/api/v10/channels/${dmChannel}`)
      expect(lookups.map((record) => record.status)).toEqual([200])
    }))
})
