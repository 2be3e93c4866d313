/**
 * `serve --cluster --bridge discord`: runner processes on loopback against a
 * throwaway PostgreSQL and a fake Discord (real discord.js in the runner).
 * The runner holding the gateway routes each message to its channel's agent
 * wherever it lives, every message is answered once in its channel, in
 * order; one agent's slow turn does not hold up another agent's reply; and
 * of two Discord runners one holds the gateway, the other taking over when
 * it dies and posting the reply its predecessor owed.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as SqlClient from "effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Exit, Redacted, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { usePostgres } from "../../support/Postgres.js"
import * as Cli from "../../support/Cli.js"
import { freePortWhere, get, onFreeRunnerPort, placement, PORT_TAKEN, type Runner, shardsSpread, startRunner } from "./Runners.js"

const postgres = usePostgres({ database: "cluster_discord" })
const DISCORD_RUNNER = path.join(import.meta.dirname, "discord-runner.mjs")

const { token, botUserId, guildId, alice } = FakeDiscord.ids
// Twelve channels, so their agents (one per channel) land on both runners.
const channels = Array.from({ length: 12 }, (_, index) => `3000000000000000${String(index + 10)}`)
const agentIds = channels.map((channel) => `discord-c${channel}`)

const work = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-cluster-discord-"))
const calls = path.join(work, "calls.log")
const hold = path.join(work, "hold.fifo")
const scope = Effect.runSync(Scope.make())
let fake: FakeDiscord.FakeDiscord
let runners: Array<Runner> = []

const discordEnv = (url: string, memory: string) => ({
  PLANCKCLAW_DATABASE_URL: url,
  PLANCKCLAW_DIR: path.join(work, memory),
  DISCORD_BOT_TOKEN: token,
  DISCORD_CHANNEL_ID: channels.join(","),
  DISCORD_API_URL: fake.apiUrl,
  RUNNER_CALLS: calls,
  RUNNER_HOLD: hold
})

const run = <A>(effect: Effect.Effect<A>) => Effect.runPromise(effect)

beforeAll(async () => {
  child.execFileSync("mkfifo", [hold])
  fake = await run(Scope.provide(FakeDiscord.make({ token, botUserId, guildId, channelIds: channels }), scope))
  const server = await run(postgres)
  const env = discordEnv(server.url, "memory")
  // One runner with the Discord bridge, one without: the agents spread over both. One after the other:
  // runners starting together on a fresh database sometimes lose the race to create its tables.
  runners = [await startRunner(env, DISCORD_RUNNER)]
  // The shards go to runners by a hash ring over their addresses: with any port, the twelve agents would
  // all land on one runner about once in 2,000 starts. The second runner's port is one that splits them.
  const first = runners[0]!.runnerPort
  const splits = (second: number) => new Set(placement([first, second], agentIds)).size === 2
  runners.push(await startRunner({ ...env, RUNNER_DISCORD: "0" }, DISCORD_RUNNER, () => freePortWhere(splits)))
  // The second runner gets its shards only as the first lets them go: an agent that turned on the first
  // before its shard moved would be running on neither. The tests send once the shards have moved.
  await run(shardsSpread(server.url, 2))
  // The slash commands are registered once the gateway is READY: messages sent from then on are seen.
  await run(fake.waitFor(() => fake.rest().find((record) => record.method === "PUT")))
}, 120_000)

afterAll(async () => {
  await Promise.all(runners.map((runner) => runner.kill("SIGKILL")))
  await run(Scope.close(scope, Exit.void))
  fs.rmSync(work, { recursive: true, force: true })
})

/** The bot's replies in `channel`: their text and the message each answers. */
const repliesIn = (channel: string) =>
  fake.created().filter((message) => message.channelId === channel).map((message) => ({ text: message.content, to: message.reference }))

const brainCalls = (): Array<string> =>
  fs.readFileSync(calls, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as string)

const say = (channelId: string, content: string) => run(fake.messageCreate({ channelId, authorId: alice, nick: "Alice", content }))

const waitForReplies = (channel: string, count: number) => run(fake.waitFor(() => repliesIn(channel).length >= count ? true : undefined))

/** Resolves once the runner has written a line matching `pattern`. */
const logged = (runner: Runner, pattern: RegExp) =>
  new Promise<void>((resolve) => {
    const check = () => pattern.test(runner.output()) && resolve()
    runner.process.stdout!.on("data", check)
    runner.process.stderr!.on("data", check)
    check()
  })

describe("serve --cluster --bridge discord", () => {
  it("answers every message once in its channel, in order, whichever runner holds its agent", async () => {
    const sent = new Map<string, Array<string>>(channels.map((channel) => [channel, []]))
    for (let round = 1; round <= 3; round++) {
      for (const [index, channel] of channels.entries()) sent.get(channel)!.push(await say(channel, `m${round} in ${index}`))
    }
    for (const channel of channels) await waitForReplies(channel, 3)
    for (const [index, channel] of channels.entries()) {
      expect(repliesIn(channel)).toEqual([1, 2, 3].map((round) => ({
        text: `reply to Alice: m${round} in ${index}`,
        to: sent.get(channel)![round - 1]
      })))
    }
    // Every message turned; a turn cut by its shard moving (the second runner has just joined) runs
    // again before its reply is decided, so a text may appear twice here, never in the replies.
    expect(new Set(brainCalls()).size).toBe(36)
    // Each runner holds some of the agents. (Not an exact count: a shard moving as the second runner
    // joins may leave an agent reported running by both for a moment, or by neither until its next message.)
    const [withDiscord, without] = runners as [Runner, Runner]
    const runningOn = (runner: Runner) =>
      Promise.all(channels.map(async (channel) => (await get(runner.httpPort, `/v1/agents/discord-c${channel}`)).body.state === "running"))
    const [here, there] = [await runningOn(withDiscord), await runningOn(without)]
    expect(here.filter(Boolean).length).toBeGreaterThan(0)
    expect(there.filter(Boolean).length).toBeGreaterThan(0)
  }, 120_000)

  it("answers another channel while one agent's turn is held, and that agent's next message after it", async () => {
    const [slow, quick] = [channels[0]!, channels[1]!]
    const [slowBefore, quickBefore] = [repliesIn(slow).length, repliesIn(quick).length]
    await say(slow, "slow [hold]")
    await say(slow, "after the slow one")
    await say(quick, "quick")
    // Opening the pipe for writing completes once the held turn reads it: the slow agent is in its turn.
    const writer = await fs.promises.open(hold, "w")
    await waitForReplies(quick, quickBefore + 1)
    expect(repliesIn(quick).at(-1)!.text).toBe("reply to Alice: quick")
    expect(repliesIn(slow).length).toBe(slowBefore)
    await writer.writeFile("go")
    await writer.close()
    await waitForReplies(slow, slowBefore + 2)
    expect(repliesIn(slow).slice(slowBefore).map((reply) => reply.text)).toEqual([
      "reply to Alice: slow [hold]",
      "reply to Alice: after the slow one"
    ])
  }, 120_000)

  it("lets the gateway go when the database ends the lock's session, holds it again and answers on", async () => {
    const server = await run(postgres)
    const holder = runners[0]!
    const ended = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // The gateway's key, 0x706c616e636b ("planck"), as pg_locks splits it; the cluster's shard locks stay.
      return yield* sql<{ ended: boolean }>`SELECT pg_terminate_backend(pid) AS ended FROM pg_locks
        WHERE locktype = 'advisory' AND classid = ${0x706c} AND objid = ${0x616e636b}`
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(server.url) })), Effect.orDie))
    expect(ended).toEqual([{ ended: true }])
    await logged(holder, /lost the Discord gateway lock[\s\S]*this runner holds the Discord gateway/)
    const channel = channels[3]!
    const answered = repliesIn(channel).length
    const id = await say(channel, "after the lock came back")
    await waitForReplies(channel, answered + 1)
    // Sent while the gateway reconnects, it may come by catch-up, which names the author by user name.
    expect(repliesIn(channel).slice(answered)).toEqual([{ text: expect.stringMatching(/^reply to [^:]+: after the lock came back$/), to: id }])
  }, 120_000)

  it("lets one of two Discord runners hold the gateway; the other takes over when it dies, posts what it owed, catches up", async () => {
    const server = await run(postgres)
    const env = discordEnv(await run(Effect.orDie(server.createDatabase("cluster_discord_standby"))), "standby-memory")
    // The first cluster lets the gateway go: its Discord runner is stopped.
    await runners[0]!.kill("SIGKILL")
    const identifies = () => fake.gateway().filter((record) => record.event === "received" && record.op === 2).length
    const before = identifies()
    // Earlier tests' runners registered the slash commands too: only a registration after this point is the new holder's.
    const registrations = () => fake.rest().filter((record) => record.method === "PUT").length
    const registeredBefore = registrations()
    const pair = [await startRunner(env, DISCORD_RUNNER), await startRunner(env, DISCORD_RUNNER)] as const
    runners.push(...pair)
    // A takeover that stalls says where: each runner's own account, and the replies seen.
    onTestFailed(() => {
      pair.forEach((runner, i) => console.error(`runner ${i} output (last 3000 characters):\n${runner.output().slice(-3000)}`))
      console.error(`replies in the channel: ${JSON.stringify(repliesIn(channels[5]!))}`)
    })
    await Promise.race(pair.map((runner) => logged(runner, /this runner holds the Discord gateway/)))
    const holder = /this runner holds the Discord gateway/.test(pair[0].output()) ? pair[0] : pair[1]
    const standby = holder === pair[0] ? pair[1] : pair[0]
    await logged(standby, /another runner holds the Discord gateway/)
    const channel = channels[5]!
    const answered = repliesIn(channel).length
    // The other channels' messages were all answered before: neither holder may answer them again.
    const elsewhere = () => fake.created().filter((message) => message.channelId !== channel).length
    const answeredElsewhere = elsewhere()
    await run(fake.waitFor(() => identifies() > before ? true : undefined))
    // Its gateway session is ready once it has registered the commands; a message sent before could be missed by the test's count.
    await run(fake.waitFor(() => registrations() > registeredBefore ? true : undefined))
    await say(channel, "before the takeover")
    await waitForReplies(channel, answered + 1)
    // A turn under way when the holder dies: its message is stored, its reply not yet posted.
    const held = await say(channel, "[hold] across the takeover")
    const writer = await fs.promises.open(hold, "w")
    // Also open for reading: what is written waits in the pipe for whichever runner runs the turn.
    const keeper = await fs.promises.open(hold, "r+")
    await holder.kill("SIGKILL")
    // Sent while no runner holds the gateway: the new holder fetches it when it catches up.
    const missed = await say(channel, "while nobody listens")
    await logged(standby, /this runner holds the Discord gateway/)
    await writer.writeFile("go")
    await writer.close()
    await waitForReplies(channel, answered + 3)
    await keeper.close()
    expect(repliesIn(channel).slice(answered)).toEqual([
      { text: "reply to Alice: before the takeover", to: expect.any(String) },
      { text: "reply to Alice: [hold] across the takeover", to: held },
      // Fetched over REST, the message names its author by the fake's user name rather than the nickname.
      { text: expect.stringMatching(/^reply to [^:]+: while nobody listens$/), to: missed }
    ])
    expect(elsewhere()).toBe(answeredElsewhere)
    expect(identifies()).toBe(before + 2)
    expect(brainCalls().filter((text) => text.endsWith(": while nobody listens")).length).toBe(1)
  }, 120_000)

  it("runs as the built command, ending with one line and exit 2 when Discord rejects the token", async () => {
    const server = await run(postgres)
    const url = await run(Effect.orDie(server.createDatabase("cluster_discord_cli")))
    const result = await onFreeRunnerPort((runnerPort) => {
      const env = Cli.baseEnv({
        ...discordEnv(url, "cli-memory"),
        DISCORD_BOT_TOKEN: "not-the-bot-token",
        ANTHROPIC_API_KEY: "test-api-key",
        PLANCKCLAW_RUNNER_ADDRESS: `127.0.0.1:${runnerPort}`
      })
      return run(Cli.run(["serve", "--cluster", "--bridge", "discord", "--http", "127.0.0.1:0"], { cwd: work, env }))
    }, { taken: (outcome) => PORT_TAKEN.test(outcome.stderr) })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("planckclaw: Discord rejected DISCORD_BOT_TOKEN")
    expect(result.stdout + result.stderr).toContain("this runner holds the Discord gateway")
  }, 120_000)
})
