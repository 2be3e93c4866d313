/**
 * Catch-up after an outage longer than a few pages of history: the newest
 * DISCORD_CATCH_UP messages are answered, not the oldest of a flood.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { captureLogs } from "../../support/LogCapture.js"

const { token, botUserId, guildId, channelA, alice } = FakeDiscord.ids

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-discord-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const take = <A, E>(messages: Stream.Stream<A, E>, count: number) =>
  messages.pipe(Stream.take(count), Stream.runCollect)

const historyReads = (fake: FakeDiscord.FakeDiscord) =>
  fake.rest().filter((record) => record.method === "GET" && /\/channels\/\d+\/messages/.test(record.path))

describe("Discord inbound: catch-up of a flood", () => {
  it.effect("answers the newest DISCORD_CATCH_UP of 2100 missed messages, reading only the pages it needs", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const logs = yield* captureLogs
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      const settings = FakeDiscord.settingsFor(fake, { catchUp: { messages: 150, hours: 24 } })
      yield* Effect.scoped(Effect.gen(function*() {
        const bridge = yield* Discord.connect(settings, { stateDirectory: dir })
        yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "seen" })
        yield* take(bridge.messages, 1)
      }))
      for (let n = 1; n <= 2100; n++) {
        yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: `missed ${n}`, dispatch: false })
      }
      const readsBefore = historyReads(fake).length
      const bridge = yield* Discord.connect(settings, { stateDirectory: dir }).pipe(Effect.provide(logs.layer))
      const got = yield* take(bridge.messages, 150)
      expect(got.map((m) => m.text)).toEqual(Array.from({ length: 150 }, (_, i) => `missed ${1951 + i}`))
      // Two pages of 100 hold the newest 150; nothing older is read.
      expect(historyReads(fake).length - readsBefore).toBe(2)
      expect(yield* logs.waitFor(/beyond DISCORD_CATCH_UP skipped/)).toContain("50 or more older one(s)")
      // Nothing twice: the next message is the next one sent.
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, content: "live" })
      expect((yield* take(bridge.messages, 1)).map((m) => m.text)).toEqual(["live"])
    }))
})
