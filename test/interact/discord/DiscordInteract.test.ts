import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Clock, ConfigProvider, Context, Duration, Effect, Result, Fiber, Layer, Option, Redacted, Schedule, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as ConfigErrors from "../../../src/config/ConfigErrors.js"
import { type InboundMessage, Interact, type InteractService } from "../../../src/ports/Interact.js"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import { parseAddress } from "../../../src/interact/discord/ReplyTargets.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { captureLogs } from "../../support/LogCapture.js"
import { withPinnedJitter } from "../../support/TestClockHttp.js"
import { advanceTo } from "../../support/TestClockWait.js"

const token = "test-token-not-secret"
/** A second login's token, so its requests tell apart from the first's. */
const laterToken = "later-token-not-secret"
const { botUserId, guildId, channelA, channelB, alice } = FakeDiscord.ids
const elsewhere = "300000000000000009"
const dmChannel = "300000000000000077"
const mallory = "400000000000000002"

const intentsWithoutDms = 1 + 512 + 32768 // Guilds, GuildMessages, MessageContent: DMs are off by default

/** The fake's settings with this file's token and channels: a test may start a fake that refuses the token. */
const settings = (fake: FakeDiscord.FakeDiscord, overrides: Partial<Discord.DiscordSettings> = {}) =>
  FakeDiscord.settingsFor(fake, { token: Redacted.make(token), channelIds: [channelA, channelB], ...overrides })

const startFake = (options: Partial<FakeDiscord.FakeDiscordOptions> = {}) =>
  FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA, channelB], ...options })

const connect = (overrides: Partial<Discord.DiscordSettings> = {}, fakeOptions: Partial<FakeDiscord.FakeDiscordOptions> = {}) =>
  Effect.gen(function*() {
    const fake = yield* startFake(fakeOptions)
    const bridge = yield* Discord.make(settings(fake, overrides))
    return { fake, bridge }
  })

/** The next messages, each with the Discord channel its address names (the question is asserted where it matters). */
const nextMessages = (bridge: InteractService, count: number) =>
  bridge.messages.pipe(
    Stream.take(count),
    Stream.runCollect,
    Effect.map((messages) => messages.map((message) => ({ ...message, channel: parseAddress(message.channel).channel })))
  )

/** The next message as the agent gets it: on the address naming its question, which its reply goes back on. */
const nextAddressed = (bridge: InteractService) =>
  bridge.messages.pipe(Stream.take(1), Stream.runCollect, Effect.map((messages) => messages[0]!))

const restTo = (fake: FakeDiscord.FakeDiscord, method: string, path: string) =>
  fake.rest().filter((record) => record.method === method && record.path === path)

const waitForRest = (fake: FakeDiscord.FakeDiscord, method: string, path: string, count: number) =>
  fake.waitFor(() => {
    const records = restTo(fake, method, path)
    return records.length >= count ? records : undefined
  })

const messagesPath = (channel: string) => `/api/v10/channels/${channel}/messages`
const typingPath = (channel: string) => `/api/v10/channels/${channel}/typing`

const framesReceived = (fake: FakeDiscord.FakeDiscord, op: number) =>
  fake.gateway().flatMap((record) => record.event === "received" && record.op === op ? [record] : [])

const dispatchesSent = (fake: FakeDiscord.FakeDiscord, t: string) =>
  fake.gateway().flatMap((record) => record.event === "sent" && record.t === t ? [record] : [])

const reconnectBackoffSeconds = Discord.reconnectBackoff.pipe(Schedule.map(({ output }) => Duration.toSeconds(output)))

const delayIn = (line: string): number => Number(/in (\d+) s/.exec(line)?.[1])

/**
 * A request the product wrongly starts during a clock jump may reach the fake
 * only after `TestClock.adjust` returns. A typing request in `channel`
 * started after the jump arrives after it: once that one is in, another
 * channel's count is final.
 */
const typingStartedLater = (fake: FakeDiscord.FakeDiscord, channel: string) =>
  Effect.gen(function*() {
    const before = restTo(fake, "POST", typingPath(channel)).length
    yield* fake.messageCreate({ channelId: channel, authorId: alice, content: "meanwhile, elsewhere" })
    yield* waitForRest(fake, "POST", typingPath(channel), before + 1)
  })

describe("Discord bridge: connection", () => {
  it.effect("logs in with HELLO, IDENTIFY (token and the intents the settings use), READY and GUILD_CREATE", () =>
    Effect.gen(function*() {
      const { fake } = yield* connect()
      const gatewayBot = restTo(fake, "GET", "/api/v10/gateway/bot")
      expect(gatewayBot.length).toBe(1)
      expect(gatewayBot[0]!.authorization).toBe(`Bot ${token}`)
      const sent = fake.gateway().filter((record) => record.event === "sent")
      expect(sent[0]).toMatchObject({ op: 10 })
      const identify = framesReceived(fake, 2)
      expect(identify.length).toBe(1)
      expect(identify[0]!.d).toMatchObject({ token, intents: intentsWithoutDms })
      yield* fake.waitFor(() => dispatchesSent(fake, "GUILD_CREATE")[0])
      expect(dispatchesSent(fake, "READY").length).toBe(1)
    }))

  it.effect("destroys the client on release: the gateway connection is closed normally", () =>
    Effect.gen(function*() {
      const fake = yield* startFake()
      yield* Effect.scoped(Discord.make(settings(fake)))
      const closed = yield* fake.waitFor(() => fake.gateway().find((record) => record.event === "closed"))
      expect(closed).toMatchObject({ connection: 1, code: 1000, by: "client" })
    }))

  it.effect("resumes the session after the gateway drops, and gets the message sent meanwhile", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.closeGateway(4000)
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "sent while you were away" })
      const resume = yield* fake.waitFor(() => framesReceived(fake, 6)[0])
      expect(resume.d).toMatchObject({ token, session_id: "session-1", seq: 2 })
      expect(yield* nextMessages(bridge, 1)).toEqual([{ channel: channelA, text: "sent while you were away" }])
      expect(dispatchesSent(fake, "RESUMED").length).toBe(1)
      expect(framesReceived(fake, 2).length).toBe(1)
    }))

  it.effect("identifies afresh when the session cannot be resumed, five seconds after the last IDENTIFY", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.closeGateway(4007)
      // A fresh connection, waiting for the IDENTIFY throttle (TestClock time has not moved).
      yield* fake.waitFor(() => fake.gateway().find((record) => record.connection === 2 && record.event === "sent"))
      expect(framesReceived(fake, 2).length).toBe(1)
      yield* TestClock.adjust("5 seconds")
      const identifies = yield* fake.waitFor(() => {
        const frames = framesReceived(fake, 2)
        return frames.length === 2 ? frames : undefined
      })
      expect(identifies[1]!.connection).toBe(2)
      expect(framesReceived(fake, 6).length).toBe(0)
      yield* fake.waitFor(() => dispatchesSent(fake, "READY")[1])
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "after the new session" })
      expect(yield* nextMessages(bridge, 1)).toEqual([{ channel: channelA, text: "after the new session" }])
    }))

  it.effect("backs off 5 s then 10 s while the gateway is down, and starts again at 5 s after a healthy connection", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      yield* Effect.gen(function*() {
        const { bridge, fake } = yield* connect()
        yield* fake.gatewayDown
        // The first reconnect is immediate and refused; then the backoff starts.
        const first = yield* logs.waitFor(/trying again in/)
        expect(delayIn(first)).toBeGreaterThanOrEqual(4)
        expect(delayIn(first)).toBeLessThanOrEqual(6)
        // Replies do not need the gateway.
        yield* bridge.send({ channel: channelA, text: "still answering" })
        expect(restTo(fake, "POST", messagesPath(channelA)).length).toBe(1)
        yield* TestClock.adjust("6 seconds")
        const second = yield* logs.waitFor(/trying again in/)
        expect(delayIn(second)).toBeGreaterThanOrEqual(8)
        expect(delayIn(second)).toBeLessThanOrEqual(12)
        yield* fake.gatewayUp
        yield* TestClock.adjust("12 seconds")
        // After a network failure discord.js starts a new session rather than resuming.
        yield* fake.waitFor(() => dispatchesSent(fake, "READY")[1])
        yield* logs.waitFor(/connected again/)
        // Healthy again: the next outage starts over at about 5 s.
        yield* fake.gatewayDown
        const afterReset = yield* logs.waitFor(/trying again in/)
        expect(delayIn(afterReset)).toBeLessThanOrEqual(6)
        yield* fake.gatewayUp
        yield* TestClock.adjust("6 seconds")
        yield* fake.waitFor(() => dispatchesSent(fake, "READY")[2])
        yield* fake.messageCreate({ channelId: channelB, authorId: alice, content: "still here?" })
        expect(yield* nextMessages(bridge, 1)).toEqual([{ channel: channelB, text: "still here?" }])
      }).pipe(Effect.provide(logs.layer))
    }))

  it.effect("keeps trying, with backoff, to reach a gateway that is down at startup", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const fake = yield* startFake()
      yield* fake.gatewayDown
      const login = yield* Discord.make(settings(fake)).pipe(Effect.provide(logs.layer), Effect.forkChild)
      const first = yield* logs.waitFor(/trying again in/)
      expect(delayIn(first)).toBeLessThanOrEqual(6)
      yield* TestClock.adjust("6 seconds")
      const second = yield* logs.waitFor(/trying again in/)
      expect(delayIn(second)).toBeGreaterThanOrEqual(8)
      yield* fake.gatewayUp
      yield* TestClock.adjust("12 seconds")
      yield* Fiber.join(login)
      expect(framesReceived(fake, 2).length).toBe(1)
    }))

  it.effect("retries a failed login with backoff", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const fake = yield* startFake()
      yield* fake.script("GET", /\/gateway\/bot$/, [{ status: 502, body: { message: "Bad Gateway" } }])
      const login = yield* Discord.make(settings(fake)).pipe(Effect.provide(logs.layer), Effect.forkChild)
      const line = yield* logs.waitFor(/Trying the Discord login again in/)
      expect(delayIn(line)).toBeGreaterThanOrEqual(4)
      expect(restTo(fake, "GET", "/api/v10/gateway/bot").length).toBe(1)
      yield* TestClock.adjust("6 seconds")
      yield* Fiber.join(login)
      expect(restTo(fake, "GET", "/api/v10/gateway/bot").length).toBe(2)
    }))

  it.effect("reports a rejected token once, with what to do, and does not retry", () =>
    Effect.gen(function*() {
      const fake = yield* startFake({ token: "another-token-not-secret" })
      const failure = yield* Discord.make(settings(fake)).pipe(Effect.flip)
      expect(failure._tag).toBe("DiscordRefused")
      expect(failure.reason).toBe("token")
      expect(failure.message).toContain("Reset Token")
      expect(failure.message).not.toContain(token)
      yield* TestClock.adjust("10 minutes")
      // A retry the jump started may still be on its way: a login started now, with a token of its own, comes
      // after it. Once that one is refused, the first token's count is final.
      const later = yield* Discord.make(settings(fake, { token: Redacted.make(laterToken) })).pipe(Effect.flip)
      expect(later.reason).toBe("token")
      const logins = restTo(fake, "GET", "/api/v10/gateway/bot")
      expect(logins.map((record) => record.authorization)).toEqual([`Bot ${token}`, `Bot ${laterToken}`])
    }))

  it.effect("reports a refused Message Content intent (close 4014) once, with what to do", () =>
    Effect.gen(function*() {
      const fake = yield* startFake({ identifyCloseCode: 4014 })
      const failure = yield* Discord.make(settings(fake)).pipe(Effect.flip)
      expect(failure._tag).toBe("DiscordRefused")
      expect(failure.reason).toBe("intent")
      expect(failure.message).toContain("Privileged Gateway Intents")
      expect(failure.message).toContain("Message Content Intent")
      yield* TestClock.adjust("10 minutes")
      // A reconnect the jump started may still be on its way: a login started now comes after it. Once that
      // one is refused too, the count is final: its IDENTIFY and the first, none between.
      const later = yield* Discord.make(settings(fake)).pipe(Effect.flip)
      expect(later.reason).toBe("intent")
      expect(framesReceived(fake, 2).length).toBe(2)
    }))

  it.effect("ends the message stream with a clear error when Discord later closes with 4004", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.closeGateway(4004)
      const failure = yield* nextMessages(bridge, 1).pipe(Effect.flip)
      expect(failure._tag).toBe("InteractError")
      expect(failure.message).toContain("DISCORD_BOT_TOKEN")
      expect(failure.message).toContain("4004")
    }))
})

describe("Discord bridge: who is answered", () => {
  it.effect("answers a message in the channel it came from, without the bot's mention", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.messageCreate({ channelId: channelB, authorId: alice, content: `<@${botUserId}> hello there` })
      const [message] = yield* nextMessages(bridge, 1)
      expect(message).toEqual({ channel: channelB, text: "hello there" })
      yield* bridge.send({ channel: message!.channel, text: "Hi! @everyone <@&5> should not ping" })
      const [post] = restTo(fake, "POST", messagesPath(channelB))
      expect(post!.body).toMatchObject({
        content: "Hi! @everyone <@&5> should not ping",
        allowed_mentions: { parse: [] },
        enforce_nonce: true
      })
      expect(restTo(fake, "POST", messagesPath(channelA)).length).toBe(0)
    }))

  it.effect("names each message's question in the channel it hands on, and a reply on that channel quotes it", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      const first = yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "first" })
      const second = yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "second" })
      const got = yield* bridge.messages.pipe(Stream.take(2), Stream.runCollect)
      expect(got).toEqual([{ channel: `${channelA}/m${first}`, text: "first" }, { channel: `${channelA}/m${second}`, text: "second" }])
      // Answered in another order than asked: each reply still quotes its own question; a plain channel quotes none.
      yield* bridge.send({ channel: got[1]!.channel, text: "to the second" })
      yield* bridge.send({ channel: got[0]!.channel, text: "to the first" })
      yield* bridge.send({ channel: channelA, text: "to nobody" })
      expect(fake.created().map((message) => [message.channelId, message.content, message.reference])).toEqual([
        [channelA, "to the second", second],
        [channelA, "to the first", first],
        [channelA, "to nobody", undefined]
      ])
    }))

  it.effect("passes hostile text through as it is, apart from the bot's own mention", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      const hostile = "@everyone <@" + mallory + "> \u202Eevil\t```\n" + "Z\u0336".repeat(500) + "\n\\n\u0000 end"
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: `${hostile} <@${botUserId}>` })
      expect(yield* nextMessages(bridge, 1)).toEqual([{ channel: channelA, text: hostile }])
    }))

  it.effect("ignores other channels, bots (itself included), webhooks, empty messages and repeats", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.messageCreate({ channelId: elsewhere, authorId: alice, content: "wrong channel" })
      yield* fake.messageCreate({ channelId: channelA, authorId: "500000000000000001", content: "beep", bot: true })
      yield* fake.messageCreate({ channelId: channelA, authorId: botUserId, content: "my own reply" })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "hook", webhook: true })
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "   " })
      yield* fake.messageCreate({ channelId: dmChannel, authorId: alice, content: "direct, with DMs off", direct: true })
      yield* fake.dispatch("MESSAGE_CREATE", { id: "1", channel_id: channelA, content: "no author" })
      const repeated = {
        id: "600000000000000001",
        channel_id: channelA,
        guild_id: guildId,
        author: { id: alice, username: "alice" },
        content: "once only",
        type: 0
      }
      yield* fake.dispatch("MESSAGE_CREATE", repeated)
      yield* fake.dispatch("MESSAGE_CREATE", repeated)
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "marker" })
      expect(yield* nextMessages(bridge, 2)).toEqual([
        { channel: channelA, text: "once only" },
        { channel: channelA, text: "marker" }
      ])
    }))

  it.effect("answers only allowed users, and their direct messages only when DISCORD_DMS is on", () =>
    Effect.gen(function*() {
      const off = yield* connect({ allowedUsers: Option.some([alice]) })
      yield* off.fake.messageCreate({ channelId: channelA, authorId: mallory, content: "let me in" })
      yield* off.fake.messageCreate({ channelId: dmChannel, authorId: alice, content: "psst", direct: true })
      yield* off.fake.messageCreate({ channelId: channelA, authorId: alice, content: "marker" })
      expect(yield* nextMessages(off.bridge, 1)).toEqual([{ channel: channelA, text: "marker" }])

      const on = yield* connect({ allowedUsers: Option.some([alice]), directMessages: true })
      yield* on.fake.messageCreate({ channelId: dmChannel, authorId: mallory, content: "psst", direct: true })
      yield* on.fake.messageCreate({ channelId: dmChannel, authorId: alice, content: "psst", direct: true })
      const [direct] = yield* nextMessages(on.bridge, 1)
      expect(direct).toEqual({ channel: dmChannel, text: "psst" })
      yield* on.bridge.send({ channel: direct!.channel, text: "hello in private" })
      expect(restTo(on.fake, "POST", messagesPath(dmChannel)).length).toBe(1)
    }))

  it.effect("queues messages that arrive during a turn, each channel's in order", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      const texts = Array.from({ length: 20 }, (_, index) => `message ${index}`)
      const channelOf = (text: string) => index(text) % 2 === 0 ? channelA : channelB
      for (const text of texts) {
        yield* fake.messageCreate({ channelId: channelOf(text), authorId: alice, content: text })
      }
      const received: ReadonlyArray<InboundMessage> = yield* nextMessages(bridge, texts.length)
      for (const channel of [channelA, channelB]) {
        expect(received.filter((message) => message.channel === channel).map((message) => message.text))
          .toEqual(texts.filter((text) => channelOf(text) === channel))
      }
    }))
})

const index = (text: string) => Number(text.split(" ")[1])

describe("Discord bridge: replies", () => {
  it.effect("splits a 4500-character reply with a code block into ordered messages of at most 2000", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      const code = Array.from({ length: 90 }, (_, line) => `const value${line} = await compute(${line}) // x`).join("\n")
      const text = `${"An explanation. ".repeat(70)}\n\n\`\`\`ts\n${code}\n\`\`\`\n\nDone.`
      expect(text.length).toBeGreaterThan(4500)
      yield* bridge.send({ channel: channelA, text })
      const contents = restTo(fake, "POST", messagesPath(channelA)).map((record) =>
        (record.body as { content: string }).content
      )
      expect(contents.length).toBe(3)
      for (const content of contents) {
        expect(content.length).toBeLessThanOrEqual(2000)
        expect((content.split("```").length - 1) % 2).toBe(0)
      }
      expect(contents[2]!.startsWith("```ts\n")).toBe(true)
      expect(contents[2]!.endsWith("Done.")).toBe(true)
      const nonces = restTo(fake, "POST", messagesPath(channelA)).map((record) => (record.body as { nonce: string }).nonce)
      expect(new Set(nonces).size).toBe(3)
    }))

  it.effect("waits out a 429 as Retry-After says, then sends once", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.script("POST", /\/messages$/, [{
        status: 429,
        headers: {
          "retry-after": "0.3",
          "x-ratelimit-limit": "5",
          "x-ratelimit-remaining": "0",
          "x-ratelimit-reset-after": "0.3",
          "x-ratelimit-bucket": "fake-bucket"
        },
        body: { message: "You are being rate limited.", retry_after: 0.3, global: false }
      }])
      yield* bridge.send({ channel: channelA, text: "patience" })
      const posts = restTo(fake, "POST", messagesPath(channelA))
      expect(posts.map((record) => record.status)).toEqual([429, 200])
      expect(posts[1]!.at - posts[0]!.at).toBeGreaterThanOrEqual(250)
      expect((posts[1]!.body as { content: string }).content).toBe("patience")
    }))

  it.effect("gives up at once, naming the channel, when a 429 asks for a wait of an hour", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.script("POST", /\/messages$/, [{
        status: 429,
        headers: { "retry-after": "3600", "x-ratelimit-global": "true", "x-ratelimit-scope": "global" },
        body: { message: "You are being rate limited.", retry_after: 3600, global: true }
      }])
      const failure = yield* bridge.send({ channel: channelA, text: "later" }).pipe(Effect.flip)
      expect(failure.message).toContain(channelA)
      expect(failure.message).toContain("rate limited by Discord for 3601 s")
      expect(restTo(fake, "POST", messagesPath(channelA)).length).toBe(1)
    }))

  it.effect("paces a 429 that gives no Retry-After on the send schedule instead of hammering", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      const bare429 = { status: 429, body: { message: "You are being rate limited.", retry_after: 1, global: false } }
      yield* fake.script("POST", /\/messages$/, [bare429, bare429])
      const started = yield* Clock.currentTimeMillis
      const sending = yield* bridge.send({ channel: channelA, text: "steady" }).pipe(Effect.forkChild)
      // Each retry sleeps only once discord.js has read the 429 (real I/O): move the clock to that sleep, not before.
      yield* advanceTo(started + 1_000)
      yield* advanceTo(started + 3_000)
      yield* Fiber.join(sending)
      expect(restTo(fake, "POST", messagesPath(channelA)).map((record) => record.status)).toEqual([429, 429, 200])
    }).pipe(withPinnedJitter))

  it.effect("retries a 5xx on the send schedule with the same nonce", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.script("POST", /\/messages$/, [{ status: 502, body: { message: "Bad Gateway" } }])
      const started = yield* Clock.currentTimeMillis
      const sending = yield* bridge.send({ channel: channelA, text: "eventually" }).pipe(Effect.forkChild)
      // The retry sleeps only once discord.js has read the 502 (real I/O): move the clock to that sleep, not before.
      yield* advanceTo(started + 1_000)
      yield* Fiber.join(sending)
      const posts = restTo(fake, "POST", messagesPath(channelA))
      expect(posts.map((record) => record.status)).toEqual([502, 200])
      expect((posts[0]!.body as { nonce: string }).nonce).toBe((posts[1]!.body as { nonce: string }).nonce)
    }).pipe(withPinnedJitter))

  it.effect("fails the send, naming the channel, when Discord refuses it", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.script("POST", /\/messages$/, [{ status: 403, body: { message: "Missing Permissions", code: 50013 } }])
      const failure = yield* bridge.send({ channel: channelB, text: "nope" }).pipe(Effect.flip)
      expect(failure.message).toContain(channelB)
      expect(failure.message).toContain("403")
      expect(restTo(fake, "POST", messagesPath(channelB)).length).toBe(1)
    }))
})

describe("Discord bridge: typing indicator", () => {
  it.effect("shows typing from acceptance, refreshes it every 8 s, and stops once the reply is sent", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "think hard" })
      yield* waitForRest(fake, "POST", typingPath(channelA), 1)
      yield* TestClock.adjust("8 seconds")
      yield* waitForRest(fake, "POST", typingPath(channelA), 2)
      yield* TestClock.adjust("8 seconds")
      yield* waitForRest(fake, "POST", typingPath(channelA), 3)
      const message = yield* nextAddressed(bridge)
      yield* bridge.send({ channel: message.channel, text: "done thinking" })
      yield* TestClock.adjust("1 minute")
      yield* typingStartedLater(fake, channelB)
      expect(restTo(fake, "POST", typingPath(channelA)).length).toBe(3)
    }))

  it.effect("stops typing when the reply finally fails", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.script("POST", /\/messages$/, [{ status: 404, body: { message: "Unknown Channel", code: 10003 } }])
      yield* fake.messageCreate({ channelId: channelB, authorId: alice, content: "hello?" })
      yield* waitForRest(fake, "POST", typingPath(channelB), 1)
      const message = yield* nextAddressed(bridge)
      yield* bridge.send({ channel: message.channel, text: "lost" }).pipe(Effect.flip)
      yield* TestClock.adjust("1 minute")
      yield* typingStartedLater(fake, channelA)
      expect(restTo(fake, "POST", typingPath(channelB)).length).toBe(1)
    }))

  it.effect("keeps typing for a message still due when the agent posts on its own in its channel (a schedule's post)", () =>
    Effect.gen(function*() {
      const { bridge, fake } = yield* connect()
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "think hard" })
      yield* waitForRest(fake, "POST", typingPath(channelA), 1)
      const message = yield* nextAddressed(bridge)
      // The channel alone, naming no message of the bridge: what a scheduled entry's reply comes back on.
      yield* bridge.send({ channel: channelA, text: "your daily reminder" })
      yield* waitForRest(fake, "POST", messagesPath(channelA), 1)
      yield* TestClock.adjust("8 seconds")
      yield* waitForRest(fake, "POST", typingPath(channelA), 2)
      yield* bridge.send({ channel: message.channel, text: "done thinking" })
      yield* TestClock.adjust("1 minute")
      yield* typingStartedLater(fake, channelB)
      expect(restTo(fake, "POST", typingPath(channelA)).length).toBe(2)
    }))
})

describe("Discord bridge: timing", () => {
  it.effect("backs off from 5 s, doubling, to a 60 s cap, with jitter", () =>
    Effect.gen(function*() {
      const step = yield* Schedule.toStep(reconnectBackoffSeconds)
      const delays: Array<number> = []
      for (let attempt = 0; attempt < 9; attempt++) delays.push((yield* step(0, undefined))[0])
      const bounds = [[4, 6], [8, 12], [16, 24], [32, 48], [48, 60], [48, 60], [48, 60], [48, 60], [48, 60]]
      delays.forEach((delay, attempt) => {
        expect(delay).toBeGreaterThanOrEqual(bounds[attempt]![0]!)
        expect(delay).toBeLessThanOrEqual(bounds[attempt]![1]!)
      })
    }))
})

describe("Discord bridge: configuration", () => {
  const load = (entries: Record<string, string>) =>
    Discord.DiscordConfig.pipe(
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(entries))), { preserveEmptyStrings: true })),
      Effect.result
    )

  it.effect("reads a channel list, allowed users, DMs and the API URL", () =>
    Effect.gen(function*() {
      const config = yield* load({
        DISCORD_BOT_TOKEN: token,
        DISCORD_CHANNEL_ID: `${channelA}, ${channelB}`,
        DISCORD_ALLOWED_USERS: alice,
        DISCORD_DMS: "1",
        DISCORD_API_URL: "http://127.0.0.1:9/api/"
      })
      expect(Result.isSuccess(config)).toBe(true)
      if (Result.isFailure(config)) return
      expect(config.success.channelIds).toEqual(Option.some([channelA, channelB]))
      expect(config.success.allowedUsers).toEqual(Option.some([alice]))
      expect(config.success.directMessages).toBe(true)
      expect(config.success.apiUrl).toBe("http://127.0.0.1:9/api")
      expect(Option.map(config.success.token, Redacted.value)).toEqual(Option.some(token))
      expect(String(config.success.token)).not.toContain(token)
    }))

  it.effect("defaults to discord.com, no DMs, everyone allowed, also for empty values", () =>
    Effect.gen(function*() {
      const config = yield* load({
        DISCORD_CHANNEL_ID: channelA,
        DISCORD_ALLOWED_USERS: "",
        DISCORD_DMS: "",
        DISCORD_API_URL: ""
      })
      expect(Result.isSuccess(config) && config.success).toMatchObject({
        apiUrl: "https://discord.com/api",
        directMessages: false,
        allowedUsers: Option.none(),
        token: Option.none()
      })
    }))

  it.effect("names a bad channel id", () =>
    Effect.gen(function*() {
      const config = yield* load({ DISCORD_CHANNEL_ID: `${channelA},general` })
      const message = Result.isFailure(config) ? ConfigErrors.describe(config.failure) : ""
      expect(message).toContain("configuration error: DISCORD_CHANNEL_ID: \"general\" is not a Discord id")
    }))

  it.effect("refuses a DISCORD_API_URL holding credentials or a query, without repeating it", () =>
    Effect.gen(function*() {
      for (const url of ["https://bot:Hunter2Secret@discord.example/api", "https://discord.example/api?token=Hunter2Secret", "bot:Hunter2Secret@discord"]) {
        const config = yield* load({ DISCORD_CHANNEL_ID: channelA, DISCORD_API_URL: url })
        const message = Result.isFailure(config) ? ConfigErrors.describe(config.failure) : ""
        expect(message, url).toContain("DISCORD_API_URL")
        expect(message, url).not.toContain("Hunter2Secret")
      }
    }))

  it.effect("builds the Interact layer from configuration", () =>
    Effect.gen(function*() {
      const fake = yield* startFake()
      const memory = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-discord-layer-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      const provider = ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([
          ["PLANCKCLAW_DIR", memory],
          ["DISCORD_BOT_TOKEN", `Bot ${token}`],
          ["DISCORD_CHANNEL_ID", channelB],
          ["DISCORD_API_URL", `${fake.apiUrl}/v10/`]
        ])), { preserveEmptyStrings: true })
      const context = yield* Layer.build(Discord.layer).pipe(Effect.provideService(ConfigProvider.ConfigProvider, provider))
      const interact = Context.get(context, Interact)
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "not configured here" })
      yield* fake.messageCreate({ channelId: channelB, authorId: alice, content: "configured" })
      expect(yield* nextMessages(interact, 1)).toEqual([{ channel: channelB, text: "configured" }])
      yield* interact.send({ channel: channelB, text: "ok" })
      expect(restTo(fake, "POST", messagesPath(channelB))[0]!.authorization).toBe(`Bot ${token}`)
      // The catch-up state and the outbox of owed replies sit in the memory directory.
      expect(fs.existsSync(path.join(memory, "discord-catch-up.json"))).toBe(true)
      expect(fs.existsSync(path.join(memory, ".discord-outbox.jsonl"))).toBe(true)
    }))

  it.effect("fails the layer with a MissingSetting naming DISCORD_BOT_TOKEN when the token is missing", () =>
    Effect.gen(function*() {
      const failure = yield* Effect.scoped(Layer.build(Discord.layer)).pipe(
        Effect.flip,
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["DISCORD_CHANNEL_ID", channelA]])), { preserveEmptyStrings: true }))
      )
      expect(failure).toMatchObject({ _tag: "MissingSetting", key: "DISCORD_BOT_TOKEN" })
      expect(failure.message).toMatch(/^DISCORD_BOT_TOKEN is not set: create a bot at /)
    }))

  it.effect("with nothing set, names the missing token first, then the missing channel", () =>
    Effect.gen(function*() {
      const layerFailure = (entries: ReadonlyArray<[string, string]>) =>
        Effect.scoped(Layer.build(Discord.layer)).pipe(
          Effect.flip,
          Effect.provideService(
            ConfigProvider.ConfigProvider,
            ConfigProvider.fromEnvRecord(Object.fromEntries(entries), { preserveEmptyStrings: true })
          )
        )
      const nothing = yield* layerFailure([])
      expect(nothing).toMatchObject({ _tag: "MissingSetting", key: "DISCORD_BOT_TOKEN" })
      const emptyToken = yield* layerFailure([["DISCORD_BOT_TOKEN", ""]])
      expect(emptyToken).toMatchObject({ _tag: "MissingSetting", key: "DISCORD_BOT_TOKEN" })
      const noChannel = yield* layerFailure([["DISCORD_BOT_TOKEN", token]])
      expect(noChannel._tag).toBe("ConfigError")
      expect(ConfigErrors.describe(noChannel as Parameters<typeof ConfigErrors.describe>[0])).toBe(
        "configuration error: DISCORD_CHANNEL_ID is not set"
      )
    }))
})
