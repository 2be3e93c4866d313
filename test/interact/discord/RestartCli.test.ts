/**
 * `planckclaw run --bridge discord` and `serve --bridge discord` across
 * restarts (built command; needs `npm run build`): each reply quotes its own
 * question, whatever the agent recovered and answered first.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { sandbox } from "../../support/Sandbox.js"

const token = "test-bot-token"
const botUserId = "100000000000000001"
const guildId = "400000000000000001"
const channel = "200000000000000001"
const alice = "300000000000000001"

const setup = (handler: AnthropicServer.Handler) =>
  Effect.gen(function*() {
    const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channel] })
    const server = yield* AnthropicServer.make(handler)
    const box = yield* sandbox({
      ANTHROPIC_API_KEY: "test-key-not-secret",
      ANTHROPIC_BASE_URL: server.url,
      DISCORD_BOT_TOKEN: token,
      DISCORD_CHANNEL_ID: channel,
      DISCORD_API_URL: fake.apiUrl,
      // A worktree's node_modules is a link: without this, a restarted bridge can load discord.js twice.
      NODE_OPTIONS: "--preserve-symlinks"
    }, "planckclaw-discord-")
    const identifies = () => fake.gateway().filter((record) => record.event === "received" && record.op === 2)
    /** Starts `run --bridge discord` and waits until it has identified `times` times in all. */
    const start = (times: number) =>
      Effect.gen(function*() {
        const running = yield* Cli.start(["run", "--bridge", "discord"], { cwd: box.dir, env: box.env })
        yield* fake.waitFor(() => identifies().length >= times ? true : undefined)
        return running
      })
    const say = (content: string) => fake.messageCreate({ channelId: channel, authorId: alice, content })
    const replies = () => fake.created().filter((message) => message.channelId === channel)
    const waitForReplies = (count: number) => fake.waitFor(() => replies().length >= count ? replies() : undefined)
    return { fake, server, box, start, say, replies, waitForReplies }
  })

describe("planckclaw run --bridge discord: replies across a restart (built command)", () => {
  it.scopedLive("stopped between a question and its reply, each reply after the restart quotes its own question", () =>
    Effect.gen(function*() {
      // The first question's turn never ends: the stop comes while it waits.
      const t = yield* setup((request, index) => index === 0 ? AnthropicServer.hang : AnthropicServer.echo(request, index))
      const first = yield* t.start(1)
      const asked = yield* t.say("asked before the stop")
      yield* t.server.awaitRequests(1)
      first.process.kill("SIGTERM")
      expect((yield* first.done).code).toBe(0)

      const whileAway = yield* t.say("asked while stopped")
      const second = yield* t.start(2)
      yield* t.waitForReplies(2)
      const after = yield* t.say("asked after the restart")
      const replies = yield* t.waitForReplies(3)
      second.process.kill("SIGTERM")
      yield* second.done
      expect(replies.map((reply) => [reply.content, reply.reference])).toEqual([
        ["re: asked before the stop", asked],
        ["re: asked while stopped", whileAway],
        ["re: asked after the restart", after]
      ])
    }), 90_000)
})
