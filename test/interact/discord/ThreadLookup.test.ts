/**
 * A thread's lookup that fails for a while (5xx, a long 429): its messages are not lost,
 * only delayed, and the thread is not taken for another's. Time under TestClock.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Stream } from "effect"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { captureLogs } from "../../support/LogCapture.js"
import { advanceTo } from "../../support/TestClockWait.js"

const { token, botUserId, guildId, channelA, alice } = FakeDiscord.ids

const badGateway = { status: 502, body: { message: "Bad Gateway" } }

const start = Effect.gen(function*() {
  const logs = yield* captureLogs
  const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
  const bridge = yield* Discord.connect(FakeDiscord.settingsFor(fake)).pipe(Effect.provide(logs.layer))
  // A thread the bridge has not heard of: its first message needs a lookup.
  const thread = yield* fake.createThread(channelA, { announce: false })
  return { bridge, fake, logs, thread }
})

const take = <A, E>(messages: Stream.Stream<A, E>, count: number) =>
  messages.pipe(Stream.take(count), Stream.runCollect)

const lookupsOf = (fake: FakeDiscord.FakeDiscord, channel: string) =>
  fake.rest().filter((r) => r.method === "GET" && r.path.endsWith(`/channels/${channel}`)).map((r) => r.status)

describe("Discord inbound: a thread's lookup failing for a while", () => {
  it.effect("a 5xx blip is retried: the message is answered, and the thread's next without a lookup", () =>
    Effect.gen(function*() {
      const { bridge, fake, thread } = yield* start
      // discord.js retries a 5xx once itself: two 502s are one failed lookup.
      yield* fake.script("GET", new RegExp(`/channels/${thread}$`), [badGateway, badGateway])
      const started = yield* Clock.currentTimeMillis
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "during the blip" })
      yield* advanceTo(started + 1_000)
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "after it" })
      const got = yield* take(bridge.messages, 2)
      expect(got.map((m) => [m.channel, m.kind, m.text])).toEqual([
        [thread, "thread", "during the blip"],
        [thread, "thread", "after it"]
      ])
      expect(lookupsOf(fake, thread)).toEqual([502, 502, 200])
    }))

  it.effect("a longer outage: the message is logged, then answered, in order, with the thread's next one", () =>
    Effect.gen(function*() {
      const { bridge, fake, logs, thread } = yield* start
      // Five attempts of two requests each: every retry fails.
      yield* fake.script("GET", new RegExp(`/channels/${thread}$`), Array.from({ length: 10 }, () => badGateway))
      const started = yield* Clock.currentTimeMillis
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "during the outage" })
      for (const at of [1_000, 3_000, 7_000, 15_000]) yield* advanceTo(started + at)
      const warning = yield* logs.waitFor(/could not be looked up/)
      expect(warning).toContain(thread)
      expect(warning).toContain("502")
      expect(lookupsOf(fake, thread)).toEqual(Array.from({ length: 10 }, () => 502))
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "Discord is back" })
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "and later" })
      const got = yield* take(bridge.messages, 3)
      expect(got.map((m) => [m.channel, m.text])).toEqual([
        [thread, "during the outage"],
        [thread, "Discord is back"],
        [thread, "and later"]
      ])
      // Looked up again once, then known.
      expect(lookupsOf(fake, thread).filter((status) => status === 200)).toEqual([200])
    }))

  it.effect("a long 429 is logged once, saying how long; the thread's messages wait for it and are answered after", () =>
    Effect.gen(function*() {
      const { bridge, fake, logs, thread } = yield* start
      const rateLimited = {
        status: 429,
        headers: { "retry-after": "300", "x-ratelimit-scope": "user" },
        body: { message: "You are being rate limited.", retry_after: 300, global: false }
      }
      yield* fake.script("GET", new RegExp(`/channels/${thread}$`), [rateLimited])
      const started = yield* Clock.currentTimeMillis
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "during the wait" })
      const warning = yield* logs.waitFor(/could not be looked up/)
      expect(warning).toContain("rate limited by Discord for 301 s")
      // Not asked again within the wait: the lookup's 1-8 s retries skip a long 429.
      expect(lookupsOf(fake, thread)).toEqual([429])
      // discord.js adds its 50 ms offset to Retry-After.
      yield* advanceTo(started + 300_050)
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "after it" })
      const got = yield* take(bridge.messages, 2)
      expect(got.map((m) => [m.channel, m.text])).toEqual([[thread, "during the wait"], [thread, "after it"]])
      expect(lookupsOf(fake, thread)).toEqual([429, 200])
      expect(logs.lines.filter((line) => line.includes("rate limited"))).toHaveLength(1)
    }))
})
