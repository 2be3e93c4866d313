/**
 * A reply is posted once, whoever hands it over again and however late:
 * the outbox remembers what it delivered, so recovery does not lean on
 * Discord's memory of nonces (minutes).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"

const { token, botUserId, guildId, channelA, alice } = FakeDiscord.ids

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-discord-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const take = <A, E>(messages: Stream.Stream<A, E>, count: number) =>
  messages.pipe(Stream.take(count), Stream.runCollect)

describe("Discord replies across a restart", () => {
  it.effect("a reply the agent hands over again after a restart is not posted again, though Discord forgot its nonces", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      const settings = FakeDiscord.settingsFor(fake)
      const question = yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "hello", dispatch: false })
      const address = `${channelA}/m${question}`
      // The reply is delivered; the agent's note that the bridge kept it dies with the process.
      yield* Effect.scoped(Effect.gen(function*() {
        const bridge = yield* Discord.make(settings, { stateDirectory: dir })
        yield* Effect.flatten(bridge.accept!({ channel: address, text: "hi back" }))
      }))
      yield* fake.forgetNonces

      // The restarted agent answers the message it recovered with the reply it had decided.
      const bridge = yield* Discord.make(settings, { stateDirectory: dir })
      yield* Effect.flatten(bridge.accept!({ channel: address, text: "hi back" }))
      const later = yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "and now?" })
      const [next] = yield* take(bridge.messages, 1)
      yield* Effect.flatten(bridge.accept!({ channel: next!.channel, text: "still here" }))
      expect(fake.created().map((message) => [message.content, message.reference])).toEqual([
        ["hi back", question],
        ["still here", later]
      ])
    }))
})
