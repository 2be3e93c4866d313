/**
 * One channel's slow request never holds up another: an attachment download
 * that does not answer delays only its own channel's messages; a slash
 * command elsewhere is acknowledged, and a plain message elsewhere handed
 * on, while the download still hangs.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Stream } from "effect"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { advanceTo } from "../../support/TestClockWait.js"

const { token, botUserId, guildId, channelA, channelB, alice } = FakeDiscord.ids

const take = <A, E>(messages: Stream.Stream<A, E>, count: number) =>
  messages.pipe(Stream.take(count), Stream.runCollect)

describe("Discord inbound: each channel in its own lane", () => {
  it.effect("a download that hangs in one channel holds up neither a slash command's acknowledgement nor a message in another", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA, channelB] })
      const bridge = yield* Discord.connect(FakeDiscord.settingsFor(fake))
      const stalled = fake.stalledAttachment("notes.txt", "text/plain", "the notes")
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "read this", attachments: [stalled.attachment] })
      yield* fake.waitFor(() => fake.rest().find((record) => record.path.startsWith("/attachments/")))

      const ask = yield* fake.interactionCreate({
        channelId: channelB,
        userId: alice,
        name: "ask",
        options: [{ name: "text", type: 3, value: "quick question" }]
      })
      yield* fake.messageCreate({ channelId: channelB, authorId: alice, content: "plain message elsewhere" })
      // Both reach the agent while channel A's download still hangs: nothing of A has come out yet.
      const first = yield* take(bridge.messages, 2)
      expect(first.map((message) => [message.channel, message.text]).sort()).toEqual([
        [channelB, "plain message elsewhere"],
        [channelB, "quick question"]
      ])
      const acknowledged = fake.rest().filter((record) => record.method === "POST" && record.path.endsWith("/callback"))
      expect(acknowledged.map((record) => [record.path.includes(ask.id), (record.body as { type: number }).type])).toEqual([
        [true, 5]
      ])

      yield* stalled.release
      const [fromA] = yield* take(bridge.messages, 1)
      expect(fromA!.channel).toBe(channelA)
      expect(fromA!.text).toBe("read this\n\n[attachment notes.txt]\nthe notes\n[end of notes.txt]")
    }))
})

describe("Discord slash commands: within Discord's three seconds", () => {
  it.effect("a command from a thread Discord is slow to describe is refused, try again, after two seconds rather than fifteen", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      yield* Discord.connect(FakeDiscord.settingsFor(fake))
      const thread = yield* fake.createThread(channelA, { announce: false })
      yield* fake.script("GET", new RegExp(`/channels/${thread}$`), Array.from({ length: 10 }, () => ({ status: 502, body: {} })))
      const started = yield* Clock.currentTimeMillis
      const ask = yield* fake.interactionCreate({ channelId: thread, userId: alice, name: "usage" })
      yield* advanceTo(started + 2_000)
      const [callback] = yield* fake.waitFor(() => {
        const callbacks = fake.rest().filter((record) => record.path.endsWith(`/interactions/${ask.id}/${ask.token}/callback`))
        return callbacks.length > 0 ? callbacks : undefined
      })
      expect(callback!.body).toEqual({ type: 4, data: { content: "I could not check this channel just now; please try again.", flags: 64 } })
    }))
})
