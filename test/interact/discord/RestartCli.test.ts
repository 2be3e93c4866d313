/**
 * `planckclaw run --bridge discord` and `serve --bridge discord` across
 * restarts (built command; needs `npm run build`): each reply quotes its own
 * question, whatever the agent recovered and answered first; a kill right
 * after a burst of messages arrives loses none of them.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { sandbox, within } from "../../support/Sandbox.js"

const { token, botUserId } = FakeDiscord.ids
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
    const agents = box.path("agents")
    /** Starts `run --bridge discord` (or `serve`) and waits until it has identified `times` times in all. */
    const start = (times: number, command: "run" | "serve" = "run") =>
      Effect.gen(function*() {
        const running = command === "run"
          ? yield* Cli.start(["run", "--bridge", "discord"], { cwd: box.dir, env: box.env })
          : yield* Cli.start(["serve", "--http", "127.0.0.1:0", "--bridge", "discord"], {
            cwd: box.dir,
            // An agent per user: each message of a burst from many people starts an agent of its own.
            env: box.envWith({ PLANCKCLAW_AGENTS_DIR: agents, DISCORD_AGENT_PER: "user" })
          })
        yield* fake.waitFor(() => identifies().length >= times ? true : undefined)
        return running
      })
    /** The catch-up state's checkpoint for the channel, once it is written. */
    const checkpoint = (command: "run" | "serve") => {
      const file = path.join(command === "run" ? box.memory : agents, "discord-catch-up.json")
      const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "{}"
      return (JSON.parse(text) as { channels?: Record<string, string> }).channels?.[channel]
    }
    const say = (content: string, authorId = alice) => fake.messageCreate({ channelId: channel, authorId, content })
    const replies = () => fake.created().filter((message) => message.channelId === channel)
    const waitForReplies = (count: number) => fake.waitFor(() => replies().length >= count ? replies() : undefined)
    return { fake, server, box, start, say, replies, waitForReplies, checkpoint }
  })

describe("planckclaw run --bridge discord: replies across a restart (built command)", () => {
  it.live("stopped between a question and its reply, each reply after the restart quotes its own question", () =>
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

  for (const command of ["run", "serve"] as const) {
    it.live(`${command}: killed (SIGKILL) right after a burst arrives, it answers every message of it after the restart, once`, () =>
      Effect.gen(function*() {
        const t = yield* setup(AnthropicServer.echo)
        const first = yield* t.start(1, command)
        // A channel first seen starts from its latest message: one answered before the burst.
        yield* t.say("before the burst")
        yield* t.waitForReplies(1)
        const burst: Array<string> = []
        for (let n = 1; n <= 60; n++) burst.push(yield* t.say(`burst ${n}`, `3000000000000001${String(n).padStart(2, "0")}`))
        // The moment the bridge has moved its catch-up state past half the burst, the process dies.
        const half = BigInt(burst[29]!)
        yield* Effect.sync(() => t.checkpoint(command)).pipe(
          Effect.repeat({ until: (id) => id !== undefined && BigInt(id) >= half, schedule: Schedule.spaced("2 millis") }),
          within("the catch-up state to pass half the burst")
        )
        first.process.kill("SIGKILL")
        yield* first.done

        const second = yield* t.start(2, command)
        const answeredOnce = () => {
          const references = t.replies().map((reply) => reply.reference)
          return burst.every((id) => references.includes(id)) ? references : undefined
        }
        const references = yield* t.fake.waitFor(answeredOnce).pipe(within("every message of the burst to be answered", "60 seconds"))
        second.process.kill("SIGTERM")
        yield* second.done
        for (const id of burst) expect(references.filter((reference) => reference === id)).toEqual([id])
      }), 120_000)
  }
})
