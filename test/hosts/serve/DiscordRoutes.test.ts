import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import * as DiscordRoutes from "../../../src/hosts/serve/DiscordRoutes.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { echoBrain, historyOf, hostLayer, tempDir } from "./Kit.js"

const { token, botUserId, guildId, channelA, channelB, alice, bob } = FakeDiscord.ids
const dmChannel = "300000000000000077"

/** The host and Discord routed into it, as `serve --bridge discord` runs them. */
const serveDiscord = (per: string) =>
  Effect.gen(function*() {
    const root = tempDir()
    const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA, channelB] })
    const values = {
      DISCORD_BOT_TOKEN: token,
      DISCORD_CHANNEL_ID: `${channelA},${channelB}`,
      DISCORD_API_URL: fake.apiUrl,
      DISCORD_DMS: "1",
      DISCORD_AGENT_PER: per
    }
    const host = yield* Layer.build(hostLayer(root, echoBrain().layer, values))
    yield* DiscordRoutes.run().pipe(
      Effect.provide(host),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(values))), { preserveEmptyStrings: true })),
      Effect.forkScoped
    )
    yield* fake.waitFor(() => fake.rest().find((record) => record.method === "PUT"))
    return { root, fake }
  })

const repliesIn = (fake: FakeDiscord.FakeDiscord, channel: string) =>
  fake.rest()
    .filter((record) => record.method === "POST" && record.path === `/api/v10/channels/${channel}/messages`)
    .map((record) => (record.body as { content: string }).content)

/** The agents' directories (the bridge's catch-up state and outbox sit beside them as files). */
const agentsIn = (root: string) =>
  fs.readdirSync(path.join(root, "agents"), { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort()

const talk = (fake: FakeDiscord.FakeDiscord) =>
  Effect.gen(function*() {
    yield* fake.messageCreate({ channelId: channelA, authorId: alice, nick: "Alice", content: `<@${botUserId}> hello from A` })
    yield* fake.messageCreate({ channelId: channelB, authorId: bob, globalName: "Bob", content: "hello from B" })
    yield* fake.messageCreate({ channelId: dmChannel, authorId: alice, content: "psst", direct: true })
    yield* fake.waitFor(() =>
      repliesIn(fake, channelA).length + repliesIn(fake, channelB).length + repliesIn(fake, dmChannel).length === 3
        ? true
        : undefined
    )
    expect(repliesIn(fake, channelA)).toEqual(["echo Alice: hello from A"])
    expect(repliesIn(fake, channelB)).toEqual(["echo Bob: hello from B"])
    expect(repliesIn(fake, dmChannel)).toEqual([`echo user-${alice}: psst`])
  })

describe("Discord in serve: one agent per channel, user, server or one; DMs to the sender's own", () => {
  const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, string]> = [
    ["channel", [`discord-c${channelA}`, `discord-c${channelB}`, `discord-u${alice}`], `discord-c${channelA}`],
    ["user", [`discord-u${alice}`, `discord-u${bob}`], `discord-u${alice}`],
    ["server", [`discord-g${guildId}`, `discord-u${alice}`], `discord-g${guildId}`],
    ["one", ["discord", `discord-u${alice}`], "discord"]
  ]
  for (const [per, agents, agentOfA] of cases) {
    it.live(`DISCORD_AGENT_PER=${per}`, () =>
      Effect.gen(function*() {
        const { fake, root } = yield* serveDiscord(per)
        yield* talk(fake)
        expect(agentsIn(root)).toEqual([...agents].sort())
        expect(historyOf(root, agentOfA).slice(0, 2)).toEqual([
          { role: "user", content: "Alice: hello from A" },
          { role: "assistant", content: "echo Alice: hello from A" }
        ])
        expect(historyOf(root, `discord-u${alice}`).map((line) => line.content)).toContain(`user-${alice}: psst`)
        // The catch-up state sits beside the agents.
        expect(fs.existsSync(path.join(root, "agents", "discord-catch-up.json"))).toBe(true)
      }))
  }

  it.live("DISCORD_AGENT_PER=server: a message caught up after a new session goes to the server's agent, as a live one does", () =>
    Effect.gen(function*() {
      const { fake, root } = yield* serveDiscord("server")
      yield* fake.messageCreate({ channelId: channelA, authorId: alice, nick: "Alice", content: "live" })
      yield* fake.waitFor(() => repliesIn(fake, channelA).length === 1 ? true : undefined)
      // Sent while the session is gone: read by catch-up over REST, where a message names no server nor nickname.
      yield* fake.invalidateSession(false)
      yield* fake.messageCreate({ channelId: channelA, authorId: bob, nick: "Bobby", globalName: "Bob", content: "missed", dispatch: false })
      yield* fake.waitFor(() => repliesIn(fake, channelA).length === 2 ? true : undefined)
      expect(agentsIn(root)).toEqual([`discord-g${guildId}`])
      // No server nickname over REST: the display name, as a live message without a nickname.
      expect(historyOf(root, `discord-g${guildId}`).map((line) => line.content)).toEqual([
        "Alice: live",
        "echo Alice: live",
        "Bob: missed",
        "echo Bob: missed"
      ])
    }), 60_000)

  it.effect("names DISCORD_AGENT_PER when its value is none of the four", () =>
    Effect.gen(function*() {
      const failure = yield* DiscordRoutes.AgentPerConfig.pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["DISCORD_AGENT_PER", "guild"]])), { preserveEmptyStrings: true })),
        Effect.flip
      )
      expect(String(failure)).toContain("DISCORD_AGENT_PER")
    }))

  it("keeps commands as they are and names the speaker otherwise, a message opening with a path included", () => {
    const message = {
      channel: channelA,
      kind: "channel" as const,
      guildId,
      authorId: alice,
      authorName: "Alice\nEvil",
      target: { _tag: "Message" as const, messageId: "1" }
    }
    expect(DiscordRoutes.textFor({ ...message, text: "/forget confirm" })).toBe("/forget confirm")
    expect(DiscordRoutes.textFor({ ...message, text: "hi" })).toBe("Alice Evil: hi")
    // A path is no command: the agent takes it as a message, and must know who wrote it.
    expect(DiscordRoutes.textFor({ ...message, text: "/etc/hosts is empty, why?" })).toBe("Alice Evil: /etc/hosts is empty, why?")
  })
})
