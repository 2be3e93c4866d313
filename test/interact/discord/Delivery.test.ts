/**
 * The outbound side of the Discord bridge against the local Discord (real
 * discord.js REST): the outbox across a stop, per-channel lanes, references
 * to the question and slash-command responses. Time under TestClock.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Clock, ConfigProvider, Context, Effect, Fiber, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { Interact } from "../../../src/ports/Interact.js"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import * as Outbox from "../../../src/interact/discord/Outbox.js"
import { makeRestPost, makeSend, showTyping } from "../../../src/interact/discord/Replies.js"
import * as Typing from "../../../src/interact/discord/Typing.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { captureLogs } from "../../support/LogCapture.js"
import { tempDir } from "../../support/Sandbox.js"
import { withPinnedJitter } from "../../support/TestClockHttp.js"
import { advanceTo } from "../../support/TestClockWait.js"

const { token, botUserId, channelA, channelB } = FakeDiscord.ids

const startFake = FakeDiscord.make({ token, botUserId, guildId: "200000000000000001", channelIds: [channelA, channelB] })

/** The outbound side as DiscordInteract wires it, with its outbox in `directory`. */
const outbound = (fake: FakeDiscord.FakeDiscord, directory: string) =>
  Effect.gen(function*() {
    const post = yield* makeRestPost(fake.apiUrl, token)
    const typing = yield* Typing.make(showTyping(post))
    const outbox = yield* Outbox.make(directory)
    return yield* makeSend(post, typing, outbox)
  })

const contents = (fake: FakeDiscord.FakeDiscord, channel: string) =>
  fake.created().filter((message) => message.channelId === channel).map((message) => message.content)

const postsTo = (fake: FakeDiscord.FakeDiscord, channel: string) =>
  fake.rest().filter((record) => record.method === "POST" && record.path === `/api/v10/channels/${channel}/messages`)

const waitForStatus = (fake: FakeDiscord.FakeDiscord, channel: string, status: number) =>
  fake.waitFor(() => postsTo(fake, channel).find((record) => record.status === status))

const journal = (directory: string) => fs.readFileSync(path.join(directory, Outbox.outboxFileName), "utf8")

/** Three parts: each paragraph fills most of a message. */
const longReply = ["first", "second", "third"].map((word) => `${word} ${"word ".repeat(350)}`.trim()).join("\n\n")

/** A snowflake Discord would have made at `ms`. */
const snowflakeAt = (ms: number) => ((BigInt(ms) - 1_420_070_400_000n) << 22n).toString()

describe("Discord outbox across a stop", () => {
  it.effect("a reply Discord answered with 5xx when the bridge stopped is sent once after the restart, same nonce", () =>
    Effect.gen(function*() {
      const fake = yield* startFake
      const directory = yield* tempDir()
      yield* fake.refuseChannel(channelA, 502)
      yield* Effect.scoped(Effect.gen(function*() {
        const bridge = yield* outbound(fake, directory)
        yield* bridge.accept({ channel: channelA, text: "kept through the outage" }, Option.none())
        yield* waitForStatus(fake, channelA, 502)
      }))
      expect(journal(directory)).toContain("kept through the outage")
      yield* fake.refuseChannel(channelA, undefined)
      const bridge = yield* outbound(fake, directory)
      // A later reply on the same lane waits for the recovered one, so both are done once it is.
      yield* bridge.send({ channel: channelA, text: "and the next" }, Option.none())
      expect(contents(fake, channelA)).toEqual(["kept through the outage", "and the next"])
      const nonces = postsTo(fake, channelA).slice(0, 2).map((record) => (record.body as { nonce: string }).nonce)
      expect(nonces[0]).toBe(nonces[1])
      expect(Outbox.replay(journal(directory))).toEqual([])
    }))

  it.effect("a multi-part reply cut between parts resumes with the parts not yet accepted, none twice", () =>
    Effect.gen(function*() {
      const fake = yield* startFake
      const directory = yield* tempDir()
      yield* fake.refuseChannel(channelA, 503, 1)
      yield* Effect.scoped(Effect.gen(function*() {
        const bridge = yield* outbound(fake, directory)
        yield* bridge.accept({ channel: channelA, text: longReply }, Option.none())
        yield* waitForStatus(fake, channelA, 503)
      }))
      expect(contents(fake, channelA).length).toBe(1)
      yield* fake.refuseChannel(channelA, undefined)
      const bridge = yield* outbound(fake, directory)
      yield* bridge.send({ channel: channelA, text: "after" }, Option.none())
      const sent = contents(fake, channelA)
      expect(sent.length).toBe(4)
      expect(sent.map((text) => text.split(" ")[0])).toEqual(["first", "second", "third", "after"])
      expect(sent.slice(0, 3).join("\n\n")).toBe(longReply)
    }))

  it.effect("replays a journal: finished replies and a torn last line are dropped, accepted parts skipped", () =>
    Effect.sync(() => {
      const parts = [{ content: "a", nonce: "n1" }, { content: "b", nonce: "n2" }]
      const text = [
        JSON.stringify({ queued: 1, channel: channelA, parts, at: 5 }),
        JSON.stringify({ queued: 2, channel: channelB, parts, target: { _tag: "Message", messageId: "7" }, at: 6 }),
        JSON.stringify({ sent: 2, part: 0 }),
        JSON.stringify({ finished: 1 }),
        "{\"queued\": 3, \"chan"
      ].join("\n")
      const owed = Outbox.replay(text)
      expect(owed.map((entry) => [entry.id, entry.sent])).toEqual([[2, 1]])
      expect(owed[0]!.target).toEqual(Option.some({ _tag: "Message", messageId: "7" }))
    }))
})

describe("Discord delivery per channel", () => {
  it.effect("a channel refusing with 403 does not hold up another; the failure is logged once, naming it", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      yield* Effect.gen(function*() {
        const fake = yield* startFake
        const bridge = yield* outbound(fake, yield* tempDir())
        yield* fake.refuseChannel(channelB, 403)
        const refused = yield* bridge.accept({ channel: channelB, text: "nope" }, Option.none())
        const allowed = yield* bridge.accept({ channel: channelA, text: "yes" }, Option.none())
        yield* Effect.all([allowed, refused])
        expect(contents(fake, channelA)).toEqual(["yes"])
        const aboutB = logs.lines.filter((line) => line.includes(channelB))
        expect(aboutB.length).toBe(1)
        expect(aboutB[0]).toMatch(/^ERROR Could not deliver a reply to Discord channel 300000000000000002 \(part 1 of 1\): 403/)
      }).pipe(Effect.provide(logs.layer))
    }))

  it.effect("a channel in a 5xx outage does not hold up another; it gives up after about ten minutes, logged once", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      yield* Effect.gen(function*() {
        const fake = yield* startFake
        const bridge = yield* outbound(fake, yield* tempDir())
        yield* fake.refuseChannel(channelB, 502)
        const stuck = yield* bridge.accept({ channel: channelB, text: "down" }, Option.none())
        yield* waitForStatus(fake, channelB, 502)
        // No clock moves: channel A is not waiting behind B's retries.
        yield* bridge.send({ channel: channelA, text: "through at once" }, Option.none())
        expect(contents(fake, channelA)).toEqual(["through at once"])
        // Jitter pinned: retry n sleeps exactly min(2^n s, 60 s). Each sleep starts only once discord.js
        // has read the 502 (real I/O), so the clock moves to that very sleep once it exists, never before.
        let due = yield* Clock.currentTimeMillis
        for (let retry = 0; retry < 15; retry++) {
          due += Math.min(1_000 * 2 ** retry, 60_000)
          yield* advanceTo(due)
        }
        yield* stuck
        expect(postsTo(fake, channelB).length).toBe(16)
        const aboutB = logs.lines.filter((line) => line.includes(channelB))
        expect(aboutB.filter((line) => line.startsWith("WARN")).length).toBe(1)
        expect(aboutB.filter((line) => line.startsWith("ERROR")).length).toBe(1)
      }).pipe(Effect.provide(logs.layer), withPinnedJitter)
    }))
})

describe("Discord delivery under a long 429", () => {
  /** A 429 asking for `seconds`, for this bucket only (not global: discord.js then keeps no wait of its own). */
  const rateLimited = (seconds: number) => ({
    status: 429,
    headers: { "retry-after": String(seconds), "x-ratelimit-scope": "user" },
    body: { message: "You are being rate limited.", retry_after: seconds, global: false }
  })
  /** discord.js adds its 50 ms offset to Retry-After. */
  const offset = 50

  it.effect("a 429 asking for 90 s is waited out, then the part is sent once; logged once, as a warning", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      yield* Effect.gen(function*() {
        const fake = yield* startFake
        const bridge = yield* outbound(fake, yield* tempDir())
        yield* fake.script("POST", new RegExp(`/channels/${channelA}/messages$`), [rateLimited(90)])
        const started = yield* Clock.currentTimeMillis
        const sending = yield* bridge.send({ channel: channelA, text: "after the wait" }, Option.none()).pipe(Effect.forkChild)
        yield* advanceTo(started + 90_000 + offset)
        yield* Fiber.join(sending)
        expect(postsTo(fake, channelA).map((record) => record.status)).toEqual([429, 200])
        expect(contents(fake, channelA)).toEqual(["after the wait"])
        const aboutA = logs.lines.filter((line) => line.includes(channelA))
        expect(aboutA).toEqual([`WARN Discord send to channel ${channelA}: rate limited by Discord for 91 s; waiting as Discord asks`])
      }).pipe(Effect.provide(logs.layer))
    }))

  it.effect("a 429 asking to wait past the part's fifteen minutes gives the reply up at once, saying so", () =>
    Effect.gen(function*() {
      const fake = yield* startFake
      const bridge = yield* outbound(fake, yield* tempDir())
      yield* fake.script("POST", new RegExp(`/channels/${channelA}/messages$`), [rateLimited(600), rateLimited(600)])
      const started = yield* Clock.currentTimeMillis
      const sending = yield* bridge.send({ channel: channelA, text: "too late" }, Option.none()).pipe(Effect.flip, Effect.forkChild)
      // The first wait fits in the deadline; the second would end 5 minutes past it.
      yield* advanceTo(started + 600_000 + offset)
      const failure = yield* Fiber.join(sending)
      expect(failure.message).toBe(
        `Could not deliver a reply to Discord channel ${channelA} (part 1 of 1): ` +
          "rate limited by Discord for 601 s, more than the 299 s left of the part's 15 minutes"
      )
      expect(postsTo(fake, channelA).map((record) => record.status)).toEqual([429, 429])
      expect(contents(fake, channelA)).toEqual([])
    }))
})

describe("Discord replies that read like Discord", () => {
  it.effect("the first part references the question, the others do not; a deleted question still gets its reply", () =>
    Effect.gen(function*() {
      const fake = yield* startFake
      const bridge = yield* outbound(fake, yield* tempDir())
      yield* fake.deleteMessage("500000000000000001")
      yield* bridge.send({ channel: channelA, text: longReply }, Option.some({ _tag: "Message", messageId: "500000000000000001" }))
      const bodies = postsTo(fake, channelA).map((record) => record.body as Record<string, unknown>)
      expect(bodies.length).toBe(3)
      expect(bodies[0]!.message_reference).toEqual({ message_id: "500000000000000001", fail_if_not_exists: false })
      expect(bodies.slice(1).map((body) => body.message_reference)).toEqual([undefined, undefined])
      // A reply that answers nothing: a plain message.
      yield* bridge.send({ channel: channelA, text: "unprompted" }, Option.none())
      expect(postsTo(fake, channelA)[3]!.body).not.toHaveProperty("message_reference")
    }))

  it.effect("a slash command's reply edits its deferred response, then follows up; nothing goes to the channel", () =>
    Effect.gen(function*() {
      const fake = yield* startFake
      const bridge = yield* outbound(fake, yield* tempDir())
      yield* TestClock.setTime(Date.UTC(2026, 0, 1))
      const interactionId = snowflakeAt(Date.UTC(2026, 0, 1) - 60_000)
      yield* bridge.send({ channel: channelA, text: longReply }, Option.some({ _tag: "Interaction", applicationId: botUserId, interactionId, token: "itoken-1" }))
      expect(fake.created().map((message) => [message.via, message.interactionToken])).toEqual([
        ["edit-original", "itoken-1"],
        ["follow-up", "itoken-1"],
        ["follow-up", "itoken-1"]
      ])
      const webhook = fake.rest().find((record) => record.method === "PATCH")!
      expect(webhook.path).toBe(`/api/v10/webhooks/${botUserId}/itoken-1/messages/@original`)
      expect(webhook.authorization).toBeUndefined()
      expect(postsTo(fake, channelA).length).toBe(0)
    }))

  it.effect("past the interaction token's fifteen minutes, or when the webhook is refused, it goes to the channel", () =>
    Effect.gen(function*() {
      const fake = yield* startFake
      const bridge = yield* outbound(fake, yield* tempDir())
      yield* TestClock.setTime(Date.UTC(2026, 0, 1))
      const stale = snowflakeAt(Date.UTC(2026, 0, 1) - 16 * 60_000)
      yield* bridge.send({ channel: channelA, text: "late answer" }, Option.some({ _tag: "Interaction", applicationId: botUserId, interactionId: stale, token: "old" }))
      expect(contents(fake, channelA)).toEqual(["late answer"])

      const fresh = snowflakeAt(Date.UTC(2026, 0, 1))
      yield* fake.script("PATCH", /\/webhooks\//, [{ status: 404, body: { message: "Unknown Webhook", code: 10015 } }])
      yield* bridge.send({ channel: channelA, text: "fallback" }, Option.some({ _tag: "Interaction", applicationId: botUserId, interactionId: fresh, token: "gone" }))
      expect(contents(fake, channelA)).toEqual(["late answer", "fallback"])
    }))
})

describe("Discord outbox location", () => {
  it.effect("the layer journals owed replies in PLANCKCLAW_DIR", () =>
    Effect.gen(function*() {
      const fake = yield* startFake
      const directory = yield* tempDir()
      yield* fake.refuseChannel(channelA, 502)
      const provider = ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([
          ["DISCORD_BOT_TOKEN", token],
          ["DISCORD_CHANNEL_ID", channelA],
          ["DISCORD_API_URL", fake.apiUrl],
          ["PLANCKCLAW_DIR", directory]
        ])), { preserveEmptyStrings: true })
      const interact = Context.get(yield* Layer.build(Discord.layer).pipe(Effect.provideService(ConfigProvider.ConfigProvider, provider)), Interact)
      yield* interact.accept!({ channel: channelA, text: "journaled beside the memory" })
      expect(journal(directory)).toContain("journaled beside the memory")
    }))
})

describe("Discord outbox journal", () => {
  it.effect("remembers the last 1,000 replies it finished across a reopen, and stays small", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const keyOf = (n: number) => `discord-5000000000000${String(n).padStart(5, "0")}`
      yield* Effect.scoped(Effect.gen(function*() {
        const outbox = yield* Outbox.make(directory)
        for (let n = 1; n <= 1500; n++) {
          const owed = yield* outbox.queue({
            channel: channelA,
            parts: [{ content: `reply ${n}`, nonce: `nonce-${n}` }],
            target: Option.none(),
            key: keyOf(n),
            at: 0
          })
          yield* outbox.partSent(owed, 0)
          yield* outbox.finished(owed)
        }
        // One still owed when the process stops.
        yield* outbox.queue({ channel: channelA, parts: [{ content: "owed", nonce: "nonce-owed" }], target: Option.none(), key: keyOf(0), at: 0 })
      }))
      // Three records a reply: without the rewrites it would hold 4,500 lines.
      expect(journal(directory).split("\n").length).toBeLessThan(1200)
      const reopened = yield* Outbox.make(directory)
      expect(reopened.recovered.map((entry) => entry.parts[0]!.content)).toEqual(["owed"])
      expect([keyOf(0), keyOf(1500), keyOf(501)].map(reopened.knows)).toEqual([true, true, true])
      expect(reopened.knows(keyOf(500))).toBe(false)
    }))
})
