/**
 * Replies survive a stop and a crash of the built command (`planckclaw run
 * --bridge discord`): a reply the bridge took is in its outbox, so after the
 * restart it is sent once, a multi-part one with the parts not yet sent.
 * Needs `npm run build`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { eventually, sandbox } from "../../support/Sandbox.js"

const { token, botUserId } = FakeDiscord.ids
const channel = "200000000000000001"
const alice = "300000000000000001"

/** Three parts: each paragraph fills most of a message. */
const longReply = ["first", "second", "third"].map((word) => `${word} ${"word ".repeat(350)}`.trim()).join("\n\n")

const setup = (firstReply: string, secondReply: string) =>
  Effect.gen(function*() {
    const fake = yield* FakeDiscord.make({ token, botUserId, guildId: "400000000000000001", channelIds: [channel] })
    const server = yield* AnthropicServer.make(
      AnthropicServer.replies(AnthropicServer.text(firstReply), AnthropicServer.text(secondReply))
    )
    const box = yield* sandbox({
      ANTHROPIC_API_KEY: "test-key-not-secret",
      ANTHROPIC_BASE_URL: server.url,
      DISCORD_BOT_TOKEN: token,
      DISCORD_CHANNEL_ID: channel,
      DISCORD_API_URL: fake.apiUrl,
      // A worktree's node_modules is a link: without this, a restarted bridge can load discord.js twice.
      NODE_OPTIONS: "--preserve-symlinks"
    })
    const identifies = () => fake.gateway().filter((record) => record.event === "received" && record.op === 2)
    /** Starts the bridge and waits until it has identified `times` times in all. */
    const start = (times: number) =>
      Effect.gen(function*() {
        const running = yield* Cli.start(["run", "--bridge", "discord"], { cwd: box.dir, env: box.env })
        yield* fake.waitFor(() => identifies().length >= times ? true : undefined)
        return running
      })
    const say = (content: string) => fake.messageCreate({ channelId: channel, authorId: alice, content })
    const sent = () => fake.created().filter((message) => message.channelId === channel).map((message) => message.content)
    const waitForSent = (count: number) => fake.waitFor(() => sent().length >= count ? sent() : undefined)
    const waitFor502 = fake.waitFor(() =>
      fake.rest().find((record) => record.path === `/api/v10/channels/${channel}/messages` && record.status === 502)
    )
    return { fake, server, box, start, say, sent, waitForSent, waitFor502 }
  })

describe("planckclaw run --bridge discord: nothing lost between the agent and Discord (built command)", () => {
  it.live("stopped while Discord answers 5xx, it sends the reply once after the restart, without asking the brain again", () =>
    Effect.gen(function*() {
      const t = yield* setup("Answer kept through the outage.", "Second answer.")
      const first = yield* t.start(1)
      yield* t.fake.refuseChannel(channel, 502)
      yield* t.say("hello?")
      yield* t.waitFor502
      first.process.kill("SIGTERM")
      expect((yield* first.done).code).toBe(0)
      expect(t.box.memoryFile(".discord-outbox.jsonl")).toContain("Answer kept through the outage.")

      yield* t.fake.refuseChannel(channel, undefined)
      const second = yield* t.start(2)
      yield* t.waitForSent(1)
      yield* t.say("and now?")
      // The channel's replies go in order: once the second is out, a duplicate of the first would be too.
      expect(yield* t.waitForSent(2)).toEqual(["Answer kept through the outage.", "Second answer."])
      expect((yield* t.server.requests).length).toBe(2)
      second.process.kill("SIGTERM")
      yield* second.done
      expect(t.sent()).toEqual(["Answer kept through the outage.", "Second answer."])
    }), 90_000)

  it.live("killed (SIGKILL) between the parts of a reply, it sends the remaining parts after the restart, none twice", () =>
    Effect.gen(function*() {
      const t = yield* setup(longReply, "Short one.")
      const first = yield* t.start(1)
      yield* t.fake.refuseChannel(channel, 502, 1)
      yield* t.say("tell me a lot")
      yield* t.waitFor502
      first.process.kill("SIGKILL")
      yield* first.done
      expect(t.sent().length).toBe(1)

      yield* t.fake.refuseChannel(channel, undefined)
      yield* t.start(2)
      yield* t.waitForSent(3)
      yield* t.say("and a little")
      const sent = yield* t.waitForSent(4)
      expect(sent.map((text) => text.split(" ")[0])).toEqual(["first", "second", "third", "Short"])
      expect(sent.slice(0, 3).join("\n\n")).toBe(longReply)
      expect((yield* t.server.requests).length).toBe(2)
      // Nothing left for the agent to answer again. The agent empties its inbox journal once the bridge has the
      // reply in its outbox; nothing orders that before the POST the fake saw, hence a bounded wait.
      yield* eventually("the agent's inbox journal to be emptied", () =>
        t.box.memoryFile(".inbox.jsonl") === "" ? true : undefined)
    }), 90_000)
})
