/**
 * Owed Discord replies handed over twice. A gateway holder that posted a
 * reply and died before noting it done leaves the message owed; the next
 * holder hands it over again under its key, gets the stored reply and sends
 * it again. The parts' nonces come from the message's key, so Discord (here
 * FakeDiscord, which honours `enforce_nonce` as Discord does) keeps one message.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Scope } from "effect"
import type * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import { outboxFileName, replay } from "../../../src/interact/discord/Outbox.js"
import { nonceFor } from "../../../src/interact/discord/ChannelPost.js"
import * as DiscordRoutes from "../../../src/hosts/serve/DiscordRoutes.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { echoBrain, hostLayer, tempDir } from "./Kit.js"

const { token, botUserId, guildId, alice } = FakeDiscord.ids
const channel = "300000000000000001"

/** Owed replies that are never noted done: the holder always "dies" before it can. */
const neverDone = () => {
  const noted = new Map<string, Discord.DiscordMessage>()
  const owed: DiscordRoutes.OwedReplies = {
    record: (message) => Effect.sync(() => void noted.set(DiscordRoutes.keyFor(message), message)),
    done: () => Effect.void,
    pending: Effect.sync(() => [...noted.values()])
  }
  return owed
}

/** Resolves once `holds()` is true, checked at every change in the directory of `file`. */
const untilChanged = (file: string, holds: () => boolean) =>
  Effect.callback<void>((resume) => {
    const watcher = fs.watch(path.dirname(file), () => check())
    const check = () => {
      if (!holds()) return
      watcher.close()
      resume(Effect.void)
    }
    check()
    return Effect.sync(() => watcher.close())
  })

const posts = (fake: FakeDiscord.FakeDiscord) =>
  fake.rest().filter((record) => record.method === "POST" && record.path === `/api/v10/channels/${channel}/messages`)

describe("Discord replies handed over again", () => {
  it("are derived from the message key: the same key gives the same nonces, another key others, within Discord's 25 characters", () => {
    expect(nonceFor("discord-1", 0)).toBe(nonceFor("discord-1", 0))
    expect(nonceFor("discord-1", 0)).not.toBe(nonceFor("discord-1", 1))
    expect(nonceFor("discord-1", 0)).not.toBe(nonceFor("discord-2", 0))
    expect(nonceFor("discord-1", 65535).length).toBeLessThanOrEqual(25)
  })

  /** A gateway holder of the host in `root`, routing with `owed`; `stateDirectory`: its outbox and catch-up state elsewhere. */
  const holders = (root: string, fake: FakeDiscord.FakeDiscord) =>
    Effect.gen(function*() {
      const values = { DISCORD_BOT_TOKEN: token, DISCORD_CHANNEL_ID: channel, DISCORD_API_URL: fake.apiUrl }
      const host = yield* Layer.build(hostLayer(root, echoBrain().layer, values))
      const owed = neverDone()
      return (ready: number, stateDirectory?: string) =>
        Effect.gen(function*() {
          const term = yield* Scope.make()
          yield* DiscordRoutes.run({ owed, ...(stateDirectory === undefined ? {} : { stateDirectory }) }).pipe(
            Effect.provide(host),
            Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(values))), { preserveEmptyStrings: true })),
            Effect.forkIn(term)
          )
          yield* fake.waitFor(() => fake.rest().filter((record) => record.method === "PUT").length >= ready ? true : undefined)
          return term
        })
    })

  /** The first holder posts the reply to "hello" and journals it delivered, but dies before noting it done. */
  const postedThenDied = (root: string, fake: FakeDiscord.FakeDiscord, holder: (ready: number) => Effect.Effect<Scope.Closeable>) =>
    Effect.gen(function*() {
      const first = yield* holder(1)
      const question = yield* fake.messageCreate({ channelId: channel, authorId: alice, nick: "Alice", content: "hello" })
      const outbox = path.join(root, "agents", outboxFileName)
      yield* fake.waitFor(() => posts(fake).length === 1 ? true : undefined)
      yield* untilChanged(outbox, () => replay(fs.readFileSync(outbox, "utf8")).length === 0)
      yield* Scope.close(first, Exit.void)
      return question
    })

  it.live("a reply posted by a holder that died before noting it is not posted again by the next, however late it comes", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
      const holder = yield* holders(root, fake)
      const question = yield* postedThenDied(root, fake, holder)
      // The restart comes after Discord has forgotten the reply's nonces.
      yield* fake.forgetNonces

      // The next holder finds the message still owed, and its outbox knows the reply went out.
      const second = yield* holder(2)
      // No nickname: caught up or dispatched, it reads the same.
      const later = yield* fake.messageCreate({ channelId: channel, authorId: alice, content: "and now?" })
      yield* fake.waitFor(() => posts(fake).length === 2 ? true : undefined)
      yield* Scope.close(second, Exit.void)
      expect(fake.created().filter((message) => message.channelId === channel).map((message) => [message.content, message.reference]))
        .toEqual([["echo Alice: hello", question], [`echo user-${alice}: and now?`, later]])
    }))

  it.live("a holder with an outbox of its own sends the reply again under the same nonces: Discord, remembering them, posts it once", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
      const holder = yield* holders(root, fake)
      const question = yield* postedThenDied(root, fake, holder)

      const second = yield* holder(2, path.join(tempDir(), "elsewhere"))
      yield* fake.waitFor(() => posts(fake).length === 2 ? true : undefined)
      yield* Scope.close(second, Exit.void)

      const [once, again] = posts(fake).map((record) => record.body as { nonce: string; content: string })
      expect(again!.nonce).toBe(once!.nonce)
      expect(again!.content).toBe("echo Alice: hello")
      expect(fake.created().filter((message) => message.channelId === channel)).toEqual([
        expect.objectContaining({ content: "echo Alice: hello", reference: question })
      ])
    }))
})

describe("Discord messages that cannot be noted owed", () => {
  it.live("are answered with why, and the catch-up state passes them", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
      const values = { DISCORD_BOT_TOKEN: token, DISCORD_CHANNEL_ID: channel, DISCORD_API_URL: fake.apiUrl }
      const host = yield* Layer.build(hostLayer(root, echoBrain().layer, values))
      const owed: DiscordRoutes.OwedReplies = {
        record: () => Effect.fail({ message: "the disk is full" }),
        done: () => Effect.void,
        pending: Effect.succeed([])
      }
      yield* DiscordRoutes.run({ owed }).pipe(
        Effect.provide(host),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(values))), { preserveEmptyStrings: true })),
        Effect.forkScoped
      )
      yield* fake.waitFor(() => fake.rest().find((record) => record.method === "PUT"))
      const question = yield* fake.messageCreate({ channelId: channel, authorId: alice, content: "hello" })
      yield* fake.waitFor(() => posts(fake).length === 1 ? true : undefined)
      expect((posts(fake)[0]!.body as { content: string }).content).toBe("Sorry, I could not take that message: the disk is full")
      const state = path.join(root, "agents", "discord-catch-up.json")
      yield* untilChanged(state, () => fs.readFileSync(state, "utf8").includes(question))
    }))
})
