/**
 * `run --bridge discord` beside the agent: a message is noted owed before it
 * goes to the agent, and at the next start the notes are squared with the
 * agent's inbox journal: what the agent holds it answers itself, what the
 * pipe lost is handed to it again, in order, and a slash command's reply
 * still finds its interaction.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { TestClock } from "effect/testing"
import type { InteractService } from "../../../src/ports/Interact.js"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import * as OwedMessages from "../../../src/interact/discord/OwedMessages.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"

const { token, botUserId, guildId, channelA, alice } = FakeDiscord.ids

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-discord-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A fake Discord and the bridge's settings, in a state directory beside the agent's inbox journal. */
const besideAgent = Effect.gen(function*() {
  const dir = yield* tempDir
  const agentInbox = path.join(dir, ".inbox.jsonl")
  const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
  return { agentInbox, dir, fake, options: { stateDirectory: dir, agentInbox }, settings: FakeDiscord.settingsFor(fake) }
})

const take = (bridge: InteractService, count: number) =>
  bridge.messages.pipe(Stream.take(count), Stream.runCollect)

describe("Discord in run, beside the agent: messages noted owed", () => {
  it.effect("after a kill, hands the agent again what its inbox did not hold, and answers each on its own question", () =>
    Effect.gen(function*() {
      const { agentInbox, dir, fake, options, settings } = yield* besideAgent

      const first = yield* Effect.scoped(Effect.gen(function*() {
        const bridge = yield* Discord.make(settings, options)
        const ids = [
          yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "one" }),
          yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "two" })
        ]
        const ask = yield* fake.interactionCreate({ channelId: channelA, userId: alice, name: "ask", options: [{ name: "text", type: 3, value: "three?" }] })
        ids.push(yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "four" }))
        const lines = yield* take(bridge, 4)
        return { ask, ids, lines }
      }))
      // A slash command has a lane of its own: find each by its text.
      const [one, two, three, four] = ["one", "two", "three?", "four"].map((text) => first.lines.find((line) => line.text === text))
      // The agent journaled "one" and the slash command before the kill; "two" and "four" were still in the pipe.
      fs.writeFileSync(
        agentInbox,
        [{ accepted: 1, key: "k1", channel: one!.channel, text: "one" }, { accepted: 2, key: "k2", channel: three!.channel, text: "three?" }]
          .map((record) => `${JSON.stringify(record)}\n`).join("")
      )
      expect((yield* Effect.flatMap(OwedMessages.make(dir), (owed) => owed.pending)).map((message) => message.text).sort())
        .toEqual(["four", "one", "three?", "two"])

      const bridge = yield* Discord.make(settings, options)
      expect(yield* take(bridge, 2)).toEqual([two, four])
      // The agent answers what it recovered first, then what it was handed again.
      for (const [line, reply] of [[one, "re: one"], [three, "re: three?"], [two, "re: two"], [four, "re: four"]] as const) {
        yield* Effect.flatten(bridge.accept!({ channel: line!.channel, text: reply }))
      }
      expect(fake.created().map((message) => [message.content, message.reference ?? message.via])).toEqual([
        ["re: one", first.ids[0]],
        ["re: three?", "edit-original"],
        ["re: two", first.ids[1]],
        ["re: four", first.ids[2]]
      ])
      expect(fake.created()[1]!.interactionToken).toBe(first.ask.token)
      // Each reply is in the outbox: nothing is owed any more.
      expect(yield* Effect.flatMap(OwedMessages.make(dir), (owed) => owed.pending)).toEqual([])
    }))

  it.effect("the reply to a message the last run took ends no typing: a new message's typing shows until its own reply", () =>
    Effect.gen(function*() {
      const { agentInbox, fake, options, settings } = yield* besideAgent
      const typingPosts = () => fake.rest().filter((record) => record.method === "POST" && record.path === `/api/v10/channels/${channelA}/typing`).length
      const [old] = yield* Effect.scoped(Effect.gen(function*() {
        const bridge = yield* Discord.make(settings, options)
        yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "old" })
        return yield* take(bridge, 1)
      }))
      // The agent journaled it before the kill: it answers it itself after the restart.
      fs.writeFileSync(agentInbox, `${JSON.stringify({ accepted: 1, key: "k1", channel: old!.channel, text: "old" })}\n`)

      const bridge = yield* Discord.make(settings, options)
      const before = typingPosts()
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "new" })
      const [fresh] = yield* take(bridge, 1)
      yield* fake.waitFor(() => typingPosts() > before ? true : undefined)
      yield* Effect.flatten(bridge.accept!({ channel: old!.channel, text: "re: old" }))
      // Still typing for "new": refreshed 8 s on.
      const shown = typingPosts()
      yield* TestClock.adjust("8 seconds")
      yield* fake.waitFor(() => typingPosts() > shown ? true : undefined)
      yield* Effect.flatten(bridge.accept!({ channel: fresh!.channel, text: "re: new" }))
      expect(fake.created().map((message) => message.content)).toEqual(["re: old", "re: new"])
    }))
})
