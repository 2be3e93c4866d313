import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Result, Option, Redacted, Stream } from "effect"
import { TestClock } from "effect/testing"
import type { InboundMessage } from "../../../src/ports/Interact.js"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import { parseAddress } from "../../../src/interact/discord/ReplyTargets.js"
import type { DiscordSettings } from "../../../src/interact/discord/Settings.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { captureLogs } from "../../support/LogCapture.js"

const { token, botUserId, guildId, channelA, channelB, alice } = FakeDiscord.ids
const elsewhere = "300000000000000009"
const dmChannel = "300000000000000077"
const mallory = "400000000000000002"

const startFake = (options: Partial<FakeDiscord.FakeDiscordOptions> = {}) =>
  FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA, channelB], ...options })

/** The fake's settings with this file's token and channels: a test may start a fake that refuses the token. */
const settingsFor = (fake: FakeDiscord.FakeDiscord, overrides: Partial<DiscordSettings> = {}): DiscordSettings =>
  FakeDiscord.settingsFor(fake, { token: Redacted.make(token), channelIds: [channelA, channelB], ...overrides })

const take = <A, E>(messages: Stream.Stream<A, E>, count: number) =>
  messages.pipe(Stream.take(count), Stream.runCollect)

/** The Interact port's messages, each with the Discord channel its address names. */
const takePlain = <E>(messages: Stream.Stream<InboundMessage, E>, count: number) =>
  Effect.map(take(messages, count), (got) => got.map((message) => ({ ...message, channel: parseAddress(message.channel).channel })))

const restTo = (fake: FakeDiscord.FakeDiscord, method: string, pattern: RegExp) =>
  fake.rest().filter((record) => record.method === method && pattern.test(record.path))

const framesReceived = (fake: FakeDiscord.FakeDiscord, op: number) =>
  fake.gateway().flatMap((record) => record.event === "received" && record.op === op ? [record] : [])

const dispatchesSent = (fake: FakeDiscord.FakeDiscord, t: string) =>
  fake.gateway().flatMap((record) => record.event === "sent" && record.t === t ? [record] : [])

/** A memory directory of its own, removed with the scope. */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-discord-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

describe("Discord inbound: start-up and fatal errors", () => {
  const load = (entries: Record<string, string>) =>
    Discord.DiscordConfig.pipe(
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries({ DISCORD_CHANNEL_ID: channelA, ...entries }))), { preserveEmptyStrings: true })),
      Effect.result,
      Effect.map((result) => Result.isFailure(result) ? String(result.failure) : "accepted")
    )

  it.effect("names each Discord key in its own error", () =>
    Effect.gen(function*() {
      expect(yield* load({ DISCORD_DMS: "maybe" })).toContain("DISCORD_DMS")
      expect(yield* load({ DISCORD_ALLOWED_USERS: "alice" })).toContain("DISCORD_ALLOWED_USERS")
      expect(yield* load({ DISCORD_API_URL: "discord.com" })).toContain("DISCORD_API_URL")
      expect(yield* load({ DISCORD_CATCH_UP: "lots" })).toContain("DISCORD_CATCH_UP")
      expect(yield* load({ DISCORD_ATTACHMENT_BYTES: "-1" })).toContain("DISCORD_ATTACHMENT_BYTES")
      expect(yield* load({ DISCORD_CATCH_UP: "10,2h", DISCORD_ATTACHMENT_BYTES: "100" })).toBe("accepted")
    }))

  it.effect("reads DISCORD_CATCH_UP: default 50 messages or 24 hours, off, and both bounds", () =>
    Effect.gen(function*() {
      const read = (value: string | undefined) =>
        Discord.DiscordConfig.pipe(
          Effect.map((config) => config.catchUp),
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries({ DISCORD_CHANNEL_ID: channelA, ...(value === undefined ? {} : { DISCORD_CATCH_UP: value }) }))), { preserveEmptyStrings: true }))
        )
      expect(yield* read(undefined)).toEqual({ messages: 50, hours: 24 })
      expect(yield* read("off")).toEqual({ messages: 0, hours: 0 })
      expect(yield* read("20, 3h")).toEqual({ messages: 20, hours: 3 })
    }))

  it.effect("asks for the Direct Messages intent only when DMs are answered", () =>
    Effect.gen(function*() {
      const fake = yield* startFake()
      yield* Discord.make(settingsFor(fake, { directMessages: true }))
      expect(framesReceived(fake, 2)[0]!.d.intents).toBe(1 + 512 + 4096 + 32768)
      const quiet = yield* startFake()
      yield* Discord.make(settingsFor(quiet))
      expect(framesReceived(quiet, 2)[0]!.d.intents & 4096).toBe(0)
    }))

  it.effect("does not announce a retry for a rejected token", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const fake = yield* startFake({ token: "another-test-bot-token" })
      const failure = yield* Discord.make(settingsFor(fake)).pipe(Effect.flip, Effect.provide(logs.layer))
      expect(failure.reason).toBe("token")
      expect(logs.lines.filter((line) => /again in/.test(line))).toEqual([])
    }))

  it.effect("ends the run's stream with the refusal as its cause when Discord closes with 4014 after start-up", () =>
    Effect.gen(function*() {
      const fake = yield* startFake()
      const bridge = yield* Discord.make(settingsFor(fake))
      yield* fake.closeGateway(4014)
      const failure = yield* take(bridge.messages, 1).pipe(Effect.flip)
      expect(failure._tag).toBe("InteractError")
      expect(failure.cause).toMatchObject({ _tag: "DiscordRefused", reason: "intent" })
      expect(failure.message).toContain("Message Content Intent")
    }))

  it.effect("warns at ready about a configured channel the bot cannot see, naming it", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const fake = yield* startFake({ hiddenChannelIds: [channelB] })
      yield* Discord.make(settingsFor(fake, { channelIds: [channelA, channelB, elsewhere] })).pipe(Effect.provide(logs.layer))
      const hidden = yield* logs.waitFor(/cannot see channel 300000000000000002/)
      expect(hidden).toContain("DISCORD_CHANNEL_ID")
      const unknown = yield* logs.waitFor(/cannot see channel 300000000000000009/)
      expect(unknown).toContain("404")
      expect(logs.lines.some((line) => line.includes(`cannot see channel ${channelA}`))).toBe(false)
    }))

  it.effect("warns at ready about a configured category, which never holds a message to answer", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const category = "300000000000000050"
      const fake = yield* startFake({ categoryIds: [category] })
      yield* Discord.make(settingsFor(fake, { channelIds: [channelA, category] })).pipe(Effect.provide(logs.layer))
      const warning = yield* logs.waitFor(/300000000000000050 is a category/)
      expect(warning).toMatch(/^WARN DISCORD_CHANNEL_ID: 300000000000000050 is a category/)
      expect(warning).toContain("Copy Channel ID")
      expect(logs.lines.some((line) => line.includes(`${channelA} is a category`))).toBe(false)
    }))
})

describe("Discord inbound: threads, mentions, attachments", () => {
  it.effect("answers in a thread under a configured channel, announced or looked up; not under another", () =>
    Effect.gen(function*() {
      const fake = yield* startFake({ channelIds: [channelA, channelB, elsewhere] })
      const bridge = yield* Discord.connect(settingsFor(fake))
      const announced = yield* fake.createThread(channelA)
      const silent = yield* fake.createThread(channelB, { announce: false })
      const foreign = yield* fake.createThread(elsewhere)
      yield* fake.messageCreate({ channelId: foreign, authorId: alice, content: "not ours" })
      yield* fake.messageCreate({ channelId: elsewhere, authorId: alice, content: "not ours either" })
      yield* fake.messageCreate({ channelId: announced, authorId: alice, content: "in a thread" })
      yield* fake.messageCreate({ channelId: silent, authorId: alice, content: "in a thread we learn of late" })
      const got = yield* take(bridge.messages, 2)
      // Each thread in its own lane: in either order.
      expect(got.map((m) => [m.channel, m.kind, m.text]).sort()).toEqual([
        [announced, "thread", "in a thread"],
        [silent, "thread", "in a thread we learn of late"]
      ].sort())
      expect(restTo(fake, "GET", new RegExp(`/channels/${silent}$`)).length).toBe(1)
      // Channels and threads GUILD_CREATE and THREAD_CREATE named need no lookup.
      expect(restTo(fake, "GET", new RegExp(`/channels/(${foreign}|${elsewhere}|${announced})$`))).toEqual([])
      yield* bridge.send({ channel: announced, text: "answered in the thread" }, Option.some(got[0]!.target))
      expect(restTo(fake, "POST", new RegExp(`/channels/${announced}/messages$`)).length).toBe(1)
    }))

  it.effect("answers a message that only mentions the bot", () =>
    Effect.gen(function*() {
      const fake = yield* startFake()
      const bridge = yield* Discord.make(settingsFor(fake))
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: `<@!${botUserId}>` })
      expect(yield* takePlain(bridge.messages, 1)).toEqual([{ channel: channelA, text: Discord.bareMentionText }])
    }))

  it.effect("adds a text attachment's content, names a binary or oversized one", () =>
    Effect.gen(function*() {
      const fake = yield* startFake()
      const bridge = yield* Discord.make(settingsFor(fake, { attachmentBytes: 1024 }))
      const notes = fake.attachment("notes.txt", "text/plain; charset=utf-8", "line one\r\nline two\n")
      const data = fake.attachment("data.json", undefined, "{\"a\":1}")
      const photo = fake.attachment("photo.png", "image/png", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]))
      const big = fake.attachment("big.log", "text/plain", "x".repeat(2000))
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "see attached", attachments: [notes, data, photo, big] })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "", attachments: [notes] })
      const [first, second] = yield* take(bridge.messages, 2)
      expect(first!.text).toBe([
        "see attached",
        "[attachment notes.txt]\nline one\nline two\n[end of notes.txt]",
        "[attachment data.json]\n{\"a\":1}\n[end of data.json]",
        "[attachment photo.png (image/png, 7 bytes): not text, not included]",
        "[attachment big.log (text/plain, 2000 bytes): over 1024 bytes, not included]"
      ].join("\n\n"))
      expect(second!.text).toBe("[attachment notes.txt]\nline one\nline two\n[end of notes.txt]")
      // The binary and the oversized file are never downloaded.
      expect(restTo(fake, "GET", /^\/attachments\//).map((r) => r.path.split("/").at(-1))).toEqual([
        "notes.txt",
        "data.json",
        "notes.txt"
      ])
    }))

  it.effect("reads a code file by its name when its type says otherwise (.ts as video/mp2t), names a real video", () =>
    Effect.gen(function*() {
      const fake = yield* startFake()
      const bridge = yield* Discord.make(settingsFor(fake, { attachmentBytes: 1024 }))
      // Browsers and Discord label TypeScript as an MPEG transport stream, and PHP, Ruby as application types.
      const code = fake.attachment("main.ts", "video/mp2t", "export const x = 1\n")
      const php = fake.attachment("index.php", "application/x-httpd-php", "<?php echo 1;\n")
      const clip = fake.attachment("clip.ts", "video/mp2t", Buffer.from([0x47, 0x40, 0x11, 0x10, 0xff, 0xfe, 0x80]))
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "review", attachments: [code, php, clip] })
      const [message] = yield* take(bridge.messages, 1)
      expect(message!.text).toBe([
        "review",
        "[attachment main.ts]\nexport const x = 1\n[end of main.ts]",
        "[attachment index.php]\n<?php echo 1;\n[end of index.php]",
        "[attachment clip.ts (video/mp2t, 7 bytes): could not be read (not UTF-8 text)]"
      ].join("\n\n"))
    }))

  it.effect("hands on a forwarded message, its text and files in a block of their own", () =>
    Effect.gen(function*() {
      const fake = yield* startFake()
      const bridge = yield* Discord.make(settingsFor(fake))
      const notes = fake.attachment("notes.txt", "text/plain", "the notes")
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "", forwarded: { content: "meeting moved to 3pm" } })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "", forwarded: { content: "", attachments: [notes] } })
      // A snapshot of a shape Discord may add later does not cost the message its text.
      yield* fake.dispatch("MESSAGE_CREATE", {
        id: "900000000000000001",
        channel_id: channelA,
        guild_id: guildId,
        author: { id: alice, username: "alice" },
        content: "with a strange snapshot",
        message_snapshots: [{ message: null }, { other: 1 }]
      })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "after" })
      expect((yield* takePlain(bridge.messages, 4)).map((message) => message.text)).toEqual([
        "[forwarded message]\nmeeting moved to 3pm\n[end of forwarded message]",
        "[forwarded message]\n[attachment notes.txt]\nthe notes\n[end of notes.txt]\n[end of forwarded message]",
        "with a strange snapshot",
        "after"
      ])
    }))
})

describe("Discord inbound: slash commands", () => {
  it.effect("registers /ask, /compact, /usage and /forget for the configured server at start-up", () =>
    Effect.gen(function*() {
      const fake = yield* startFake()
      yield* Discord.make(settingsFor(fake))
      const [put] = yield* fake.waitFor(() => {
        const puts = restTo(fake, "PUT", /\/commands$/)
        return puts.length > 0 ? puts : undefined
      })
      expect(put!.path).toBe(`/api/v10/applications/${botUserId}/guilds/${guildId}/commands`)
      expect((put!.body as ReadonlyArray<{ name: string }>).map((c) => c.name)).toEqual(["ask", "compact", "usage", "forget"])
    }))

  it.effect("defers each command at once and hands the agent its text, recording the interaction to follow up", () =>
    Effect.gen(function*() {
      const fake = yield* startFake()
      const bridge = yield* Discord.connect(settingsFor(fake))
      const ask = yield* fake.interactionCreate({
        channelId: channelA,
        userId: alice,
        name: "ask",
        options: [{ name: "text", type: 3, value: "what is 2+2?" }],
        nick: "Alice"
      })
      yield* fake.interactionCreate({ channelId: channelA, userId: alice, name: "compact" })
      yield* fake.interactionCreate({ channelId: channelB, userId: alice, name: "usage" })
      yield* fake.interactionCreate({ channelId: channelA, userId: alice, name: "forget" })
      yield* fake.interactionCreate({
        channelId: channelA,
        userId: alice,
        name: "forget",
        options: [{ name: "confirm", type: 5, value: true }]
      })
      const got = yield* take(bridge.messages, 5)
      // Each channel's commands in order; channels do not wait for one another.
      expect(got.filter((m) => m.channel === channelA).map((m) => m.text)).toEqual(["what is 2+2?", "/compact", "/forget", "/forget confirm"])
      expect(got.filter((m) => m.channel === channelB).map((m) => m.text)).toEqual(["/usage"])
      expect(got[0]).toMatchObject({
        channel: channelA,
        authorName: "Alice",
        target: { _tag: "Interaction", applicationId: botUserId, interactionId: ask.id, token: ask.token }
      })
      const callbacks = restTo(fake, "POST", /\/interactions\/\d+\/[^/]+\/callback$/)
      expect(callbacks.map((r) => r.body)).toEqual(Array.from({ length: 5 }, () => ({ type: 5 })))
      expect(callbacks[0]!.path).toBe(`/api/v10/interactions/${ask.id}/${ask.token}/callback`)
      expect(callbacks[0]!.authorization).toBeUndefined()
    }))

  it.effect("refuses ephemerally in another channel or for someone not allowed", () =>
    Effect.gen(function*() {
      const fake = yield* startFake({ channelIds: [channelA, channelB, elsewhere] })
      const bridge = yield* Discord.connect(settingsFor(fake, { allowedUsers: Option.some([alice]) }))
      const asked = [
        yield* fake.interactionCreate({ channelId: elsewhere, userId: alice, name: "compact" }),
        yield* fake.interactionCreate({ channelId: channelA, userId: mallory, name: "compact" }),
        yield* fake.interactionCreate({ channelId: dmChannel, userId: alice, name: "usage", direct: true }),
        yield* fake.interactionCreate({ channelId: channelA, userId: alice, name: "usage" })
      ]
      expect((yield* take(bridge.messages, 1)).map((m) => m.text)).toEqual(["/usage"])
      // Each channel's commands in a lane of their own: the answers come in any order.
      const callbacks = yield* fake.waitFor(() => {
        const found = restTo(fake, "POST", /\/callback$/)
        return found.length >= 4 ? found : undefined
      })
      const answerTo = (ask: { readonly id: string }) => {
        const body = callbacks.find((r) => r.path.includes(`/interactions/${ask.id}/`))?.body as { type: number; data?: { flags: number } }
        return [body.type, body.data?.flags]
      }
      expect(asked.map(answerTo)).toEqual([[4, 64], [4, 64], [4, 64], [5, undefined]])
    }))
})

describe("Discord inbound: catch-up", () => {
  it.effect("answers, once and in order, what was sent while the bridge was stopped", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fake = yield* startFake()
      yield* Effect.scoped(Effect.gen(function*() {
        const bridge = yield* Discord.make(settingsFor(fake), { stateDirectory: dir })
        yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "before the stop" })
        expect((yield* take(bridge.messages, 1)).map((m) => m.text)).toEqual(["before the stop"])
      }))
      expect(JSON.parse(fs.readFileSync(path.join(dir, "discord-catch-up.json"), "utf8")).channels[channelA]).toBe(
        fake.history(channelA).at(-1)!.id
      )
      // Stopped: these never reach a gateway connection of ours.
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "while away 1" })
      yield* fake.messageCreate({ channelId: channelB, authorId: alice, content: "while away 2" })
      yield* fake.messageCreate({ channelId: channelA, authorId: "500000000000000001", content: "a bot", bot: true })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "while away 3" })
      const restarted = yield* Discord.make(settingsFor(fake), { stateDirectory: dir })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "after the restart" })
      const got = yield* takePlain(restarted.messages, 4)
      expect(got.map((m) => m.text).sort()).toEqual(["after the restart", "while away 1", "while away 2", "while away 3"])
      // Per channel, in the order they were sent.
      expect(got.filter((m) => m.channel === channelA).map((m) => m.text)).toEqual([
        "while away 1",
        "while away 3",
        "after the restart"
      ])
      // Nothing twice: the next message is the next one sent.
      yield* fake.messageCreate({ channelId: channelB, authorId: alice, content: "marker" })
      expect((yield* take(restarted.messages, 1)).map((m) => m.text)).toEqual(["marker"])
      expect(restTo(fake, "GET", /\/channels\/\d+\/messages$/).length).toBeGreaterThanOrEqual(2)
    }))

  it.effect("fetches what an invalid session lost, and answers each message once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fake = yield* startFake()
      const bridge = yield* Discord.make(settingsFor(fake), { stateDirectory: dir })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "first" })
      expect((yield* take(bridge.messages, 1)).map((m) => m.text)).toEqual(["first"])
      yield* fake.invalidateSession(false)
      // Lost between the invalid session and the new IDENTIFY: in the history, never dispatched.
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "lost 1", dispatch: false })
      yield* fake.messageCreate({ channelId: channelB, authorId: alice, content: "lost 2", dispatch: false })
      yield* TestClock.adjust("6 seconds")
      yield* fake.waitFor(() => dispatchesSent(fake, "READY")[1])
      const got = yield* take(bridge.messages, 2)
      expect(got.map((m) => m.text).sort()).toEqual(["lost 1", "lost 2"])
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "live again" })
      expect((yield* take(bridge.messages, 1)).map((m) => m.text)).toEqual(["live again"])
    }))

  it.effect("answers what was sent during a gateway outage, which the new session does not replay", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const logs = yield* captureLogs
      const fake = yield* startFake()
      const bridge = yield* Discord.make(settingsFor(fake), { stateDirectory: dir }).pipe(Effect.provide(logs.layer))
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "before the outage" })
      expect((yield* take(bridge.messages, 1)).map((m) => m.text)).toEqual(["before the outage"])
      yield* fake.gatewayDown
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "during 1" })
      yield* fake.messageCreate({ channelId: channelB, authorId: alice, content: "during 2" })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "during 3" })
      // The first reconnect is at once and refused; the next waits out the backoff.
      yield* logs.waitFor(/trying again in/)
      yield* fake.gatewayUp
      yield* TestClock.adjust("12 seconds")
      yield* fake.waitFor(() => dispatchesSent(fake, "READY")[1])
      expect(framesReceived(fake, 6)).toEqual([])
      const got = yield* takePlain(bridge.messages, 3)
      // Each channel's in order; channels caught up side by side.
      expect(got.filter((m) => m.channel === channelA).map((m) => m.text)).toEqual(["during 1", "during 3"])
      expect(got.filter((m) => m.channel === channelB).map((m) => m.text)).toEqual(["during 2"])
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "after" })
      expect((yield* take(bridge.messages, 1)).map((m) => m.text)).toEqual(["after"])
    }))

  it.effect("catches up a direct message conversation and a thread as well", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fake = yield* startFake()
      const thread = yield* fake.createThread(channelA)
      const dms = settingsFor(fake, { directMessages: true })
      yield* Effect.scoped(Effect.gen(function*() {
        const bridge = yield* Discord.make(dms, { stateDirectory: dir })
        yield* fake.messageCreate({ channelId: dmChannel, authorId: alice, content: "dm before", direct: true })
        yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "thread before" })
        expect((yield* take(bridge.messages, 2)).map((m) => m.text).sort()).toEqual(["dm before", "thread before"])
      }))
      yield* fake.messageCreate({ channelId: dmChannel, authorId: alice, content: "dm while away", direct: true })
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "thread while away" })
      const bridge = yield* Discord.make(dms, { stateDirectory: dir })
      const got = yield* takePlain(bridge.messages, 2)
      expect(got.map((m) => [m.channel, m.text]).sort()).toEqual([[dmChannel, "dm while away"], [thread, "thread while away"]].sort())
    }))

  /** A bridge that handled one message in channelA ("seen") and stopped: what is sent next is missed. */
  const oneSeenThenAway = Effect.gen(function*() {
    const dir = yield* tempDir
    const logs = yield* captureLogs
    const fake = yield* startFake()
    yield* Effect.scoped(Effect.gen(function*() {
      const bridge = yield* Discord.make(settingsFor(fake), { stateDirectory: dir })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "seen" })
      yield* take(bridge.messages, 1)
    }))
    return { dir, fake, logs }
  })

  it.effect("keeps to DISCORD_CATCH_UP: only the last messages of an outage", () =>
    Effect.gen(function*() {
      const { dir, fake, logs } = yield* oneSeenThenAway
      for (let n = 1; n <= 5; n++) yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: `missed ${n}` })
      const bridge = yield* Discord.make(settingsFor(fake, { catchUp: { messages: 2, hours: 24 } }), { stateDirectory: dir }).pipe(
        Effect.provide(logs.layer)
      )
      expect((yield* take(bridge.messages, 2)).map((m) => m.text)).toEqual(["missed 4", "missed 5"])
      expect(yield* logs.waitFor(/3 older one\(s\) beyond DISCORD_CATCH_UP skipped/)).toContain(channelA)
    }))

  it.effect("counts against DISCORD_CATCH_UP only messages it could answer, and passes the others: its own replies, other bots', webhooks', people DISCORD_ALLOWED_USERS leaves out", () =>
    Effect.gen(function*() {
      const { dir, fake, logs } = yield* oneSeenThenAway
      // As after a kill in a burst: the bridge's replies posted among the messages it had not held yet.
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "missed 1" })
      for (let n = 1; n <= 3; n++) yield* fake.messageCreate({ channelId: channelA, authorId: botUserId, content: `re: earlier ${n}`, bot: true })
      yield* fake.messageCreate({ channelId: channelA, authorId: "900000000000000009", content: "another bot", bot: true })
      yield* fake.messageCreate({ channelId: channelA, authorId: "900000000000000010", content: "a webhook", webhook: true })
      yield* fake.messageCreate({ channelId: channelA, authorId: mallory, content: "not let in" })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "missed 2" })
      const last = yield* fake.messageCreate({ channelId: channelA, authorId: botUserId, content: "re: missed 1", bot: true })
      yield* Effect.scoped(Effect.gen(function*() {
        const settings = settingsFor(fake, { catchUp: { messages: 2, hours: 24 }, allowedUsers: Option.some([alice]) })
        const bridge = yield* Discord.make(settings, { stateDirectory: dir }).pipe(Effect.provide(logs.layer))
        expect((yield* take(bridge.messages, 2)).map((m) => m.text)).toEqual(["missed 1", "missed 2"])
        const found = yield* logs.waitFor(/sent while the bridge was away/)
        expect(found).toContain("2 message(s) sent while the bridge was away, 2 to answer")
        expect(found).not.toContain("skipped")
      }))
      // Read and passed: the next session starts after the bridge's last reply, not before it.
      expect(JSON.parse(fs.readFileSync(path.join(dir, "discord-catch-up.json"), "utf8")).channels[channelA]).toBe(last)
    }))

  it.effect("reads at most 21 pages of a channel: past them it says older ones were not read, not that the window was full", () =>
    Effect.gen(function*() {
      const { dir, fake, logs } = yield* oneSeenThenAway
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "missed, too far back" })
      for (let n = 1; n <= 2_150; n++) yield* fake.messageCreate({ channelId: channelA, authorId: "900000000000000009", content: `bot ${n}`, bot: true })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "missed, recent" })
      const bridge = yield* Discord.make(settingsFor(fake, { catchUp: { messages: 5, hours: 24 } }), { stateDirectory: dir }).pipe(
        Effect.provide(logs.layer)
      )
      expect((yield* take(bridge.messages, 1)).map((m) => m.text)).toEqual(["missed, recent"])
      const found = yield* logs.waitFor(/sent while the bridge was away/)
      expect(found).toContain("1 message(s) sent while the bridge was away, 1 to answer; older ones not read (at most 2100 messages are read per channel)")
      expect(found).not.toContain("DISCORD_CATCH_UP")
    }))
})
