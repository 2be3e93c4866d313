/**
 * What the bridge learns of channels and threads does not grow for as long
 * as it runs: a thread or channel Discord deletes, or a server the bot
 * leaves, is forgotten, and only the most recently used are kept. Whatever
 * is forgotten is looked up again if it is ever needed, with the same answer.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as ChannelKinds from "../../../src/interact/discord/ChannelKinds.js"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import * as DiscordRest from "../../../src/interact/discord/DiscordRest.js"
import type { DiscordSettings } from "../../../src/interact/discord/Settings.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"

const { token, botUserId, guildId, channelA, channelB, alice } = FakeDiscord.ids

const settingsFor = (fake: FakeDiscord.FakeDiscord): DiscordSettings => FakeDiscord.settingsFor(fake, { channelIds: [channelA, channelB] })

const take = <A, E>(messages: Stream.Stream<A, E>, count: number) =>
  messages.pipe(Stream.take(count), Stream.runCollect)

const lookupsOf = (fake: FakeDiscord.FakeDiscord, channel: string) =>
  fake.rest().filter((record) => record.method === "GET" && record.path === `/api/v10/channels/${channel}`).map((r) => r.status)

/** A bridge with a thread announced under each configured channel, each answered once without a lookup. */
const withThreads = Effect.gen(function*() {
  const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA, channelB] })
  const bridge = yield* Discord.connect(settingsFor(fake))
  const threadA = yield* fake.createThread(channelA)
  const threadB = yield* fake.createThread(channelB)
  yield* fake.messageCreate({ channelId: threadA, authorId: alice, content: "first in A" })
  yield* fake.messageCreate({ channelId: threadB, authorId: alice, content: "first in B" })
  expect((yield* take(bridge.messages, 2)).map((m) => m.text).sort()).toEqual(["first in A", "first in B"])
  expect([...lookupsOf(fake, threadA), ...lookupsOf(fake, threadB)]).toEqual([])
  return { bridge, fake, threadA, threadB }
})

/** Each thread's next message, answered, in either order (each thread has its own lane). */
const nextInEach = (
  fake: FakeDiscord.FakeDiscord,
  bridge: Discord.DiscordBridge,
  threads: ReadonlyArray<string>
) =>
  Effect.gen(function*() {
    for (const thread of threads) yield* fake.messageCreate({ channelId: thread, authorId: alice, content: `again in ${thread}` })
    const got = yield* take(bridge.messages, threads.length)
    expect(got.map((m) => [m.channel, m.kind]).sort()).toEqual(threads.map((thread) => [thread, "thread"]).sort())
  })

describe("Discord channels learnt: forgotten when Discord deletes them", () => {
  it.effect("a deleted thread is forgotten: anything later about it is looked up again", () =>
    Effect.gen(function*() {
      const { bridge, fake, threadA, threadB } = yield* withThreads
      yield* fake.dispatch("THREAD_DELETE", { id: threadA, guild_id: guildId, parent_id: channelA, type: 11 })
      // The fake still describes the thread: a lookup says what it was, and its message is answered as before.
      yield* nextInEach(fake, bridge, [threadA, threadB])
      expect(lookupsOf(fake, threadA)).toEqual([200])
      expect(lookupsOf(fake, threadB)).toEqual([])
    }))

  it.effect("a deleted channel is forgotten with its threads, for which Discord sends no THREAD_DELETE", () =>
    Effect.gen(function*() {
      const { bridge, fake, threadA, threadB } = yield* withThreads
      yield* fake.dispatch("CHANNEL_DELETE", { id: channelB, guild_id: guildId, type: 0, parent_id: null })
      yield* nextInEach(fake, bridge, [threadA, threadB])
      expect(lookupsOf(fake, threadB)).toEqual([200])
      expect(lookupsOf(fake, threadA)).toEqual([])
    }))

  it.effect("a server the bot leaves is forgotten; one that is only unavailable (an outage) is kept", () =>
    Effect.gen(function*() {
      const { bridge, fake, threadA, threadB } = yield* withThreads
      yield* fake.dispatch("GUILD_DELETE", { id: guildId, unavailable: true })
      yield* nextInEach(fake, bridge, [threadA])
      expect(lookupsOf(fake, threadA)).toEqual([])
      yield* fake.dispatch("GUILD_DELETE", { id: guildId })
      yield* nextInEach(fake, bridge, [threadA, threadB])
      expect(lookupsOf(fake, threadA)).toEqual([200])
      expect(lookupsOf(fake, threadB)).toEqual([200])
    }))

  it.effect("a thread's message waiting in its lane when the thread is deleted is answered as it would have been", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA, channelB] })
      const bridge = yield* Discord.connect(settingsFor(fake))
      const thread = yield* fake.createThread(channelA)
      // The lane is busy downloading the first message's attachment when the thread goes.
      const stalled = fake.stalledAttachment("notes.txt", "text/plain", "the notes")
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "with a file", attachments: [stalled.attachment] })
      yield* fake.messageCreate({ channelId: thread, authorId: alice, content: "sent before the delete" })
      yield* fake.waitFor(() => fake.rest().find((record) => record.path.includes("/attachments/")))
      yield* fake.dispatch("THREAD_DELETE", { id: thread, guild_id: guildId, parent_id: channelA, type: 11 })
      // Dispatches are taken in order: once this one is answered, the bridge has seen the THREAD_DELETE.
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "meanwhile in A" })
      expect((yield* take(bridge.messages, 1)).map((m) => m.text)).toEqual(["meanwhile in A"])
      yield* stalled.release
      const got = yield* take(bridge.messages, 2)
      expect(got.map((m) => [m.channel, m.kind, m.text.split("\n")[0]])).toEqual([
        [thread, "thread", "with a file"],
        [thread, "thread", "sent before the delete"]
      ])
      // Both answered from what THREAD_CREATE said; nothing looked up.
      expect(lookupsOf(fake, thread)).toEqual([])
    }))
})

describe("Discord channels learnt: the most recently used kept", () => {
  /** `count` channels of another server, as a GUILD_CREATE lists them. */
  const otherServer = (count: number, from: bigint) => ({
    id: "200000000000000099",
    channels: Array.from({ length: count }, (_, index) => ({ id: String(from + BigInt(index)), type: 0 })),
    threads: []
  })

  it.effect("past the bound, the least recently used thread is forgotten and looked up again, with the same answer", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      const rest = yield* DiscordRest.make(fake.apiUrl, token)
      const kinds = ChannelKinds.make({ ...settingsFor(fake), channelIds: [channelA] }, rest)
      const [used, unused] = [yield* fake.createThread(channelA, { announce: false }), yield* fake.createThread(channelA, { announce: false })]
      for (const thread of [used, unused]) yield* kinds.learn({ id: thread, type: 11, guild_id: guildId, parent_id: channelA })
      // All but two places taken by other channels; then `used` is asked for, so `unused` is the least recently used.
      yield* kinds.learnThreadsOf(otherServer(ChannelKinds.rememberedChannels - 2, 900000000000000000n))
      expect(yield* kinds.ofId(used)).toBe("thread")
      yield* kinds.learnThreadsOf(otherServer(1, 910000000000000000n))
      expect(lookupsOf(fake, used)).toEqual([])
      expect(yield* kinds.ofId(unused)).toBe("thread")
      expect(lookupsOf(fake, unused)).toEqual([200])
      // Known again from then on.
      expect(yield* kinds.ofId(unused)).toBe("thread")
      expect(lookupsOf(fake, unused)).toEqual([200])
    }))
})
