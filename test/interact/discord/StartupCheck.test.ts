/**
 * The start-up check of a configured channel when Discord fails rather than
 * refuses: a 5xx or a 429 on the lookup or on the slash commands'
 * registration is Discord's, said as such (not "invite the bot"), and both
 * are tried again later instead of waiting for a restart. Time under
 * TestClock.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import * as Discord from "../../../src/interact/discord/DiscordInteract.js"
import type { DiscordSettings } from "../../../src/interact/discord/Settings.js"
import * as FakeDiscord from "../../support/FakeDiscord.js"
import { captureLogs } from "../../support/LogCapture.js"
import { advanceTo } from "../../support/TestClockWait.js"

const { token, botUserId, guildId, channelA } = FakeDiscord.ids

const unavailable = { status: 503, body: { message: "Service Unavailable" } }
/** A 429 asking for `seconds`, for this bucket only. */
const rateLimited = (seconds: number) => ({
  status: 429,
  headers: { "retry-after": String(seconds), "x-ratelimit-scope": "user" },
  body: { message: "You are being rate limited.", retry_after: seconds, global: false }
})
/** discord.js adds its 50 ms offset to Retry-After. */
const offset = 50

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-discord-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const settingsFor = (fake: FakeDiscord.FakeDiscord): DiscordSettings => FakeDiscord.settingsFor(fake, { channelIds: [channelA] })

const lookups = (fake: FakeDiscord.FakeDiscord) =>
  fake.rest().filter((record) => record.method === "GET" && record.path === `/api/v10/channels/${channelA}`)

const registrations = (fake: FakeDiscord.FakeDiscord) =>
  fake.rest().filter((record) => record.method === "PUT" && record.path.endsWith(`/guilds/${guildId}/commands`))

const registered = (fake: FakeDiscord.FakeDiscord) =>
  fake.waitFor(() => registrations(fake).some((record) => record.status === 200) ? true : undefined)

describe("Discord start-up check of a configured channel, when Discord fails", () => {
  it.effect("a 5xx on the lookup is said to be Discord's, not the bot's access; the lookup and the commands follow later", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      // discord.js tries a 5xx twice: two 503s are one failed lookup.
      yield* fake.script("GET", new RegExp(`/channels/${channelA}$`), [unavailable, unavailable])
      const started = yield* Clock.currentTimeMillis
      yield* Discord.connect(settingsFor(fake), { stateDirectory: yield* tempDir }).pipe(Effect.provide(logs.layer))
      const warning = yield* logs.waitFor(new RegExp(`^WARN .*${channelA}`))
      expect(warning).toMatch(/^WARN /)
      expect(warning).toContain("503")
      expect(warning).toContain("Discord is failing")
      expect(warning).not.toMatch(/cannot see|invite/)
      expect(registrations(fake)).toEqual([])

      yield* advanceTo(started + 1_000)
      yield* registered(fake)
      expect(lookups(fake).map((record) => record.status)).toEqual([503, 503, 200])
      expect(yield* logs.waitFor(/looked up/)).toContain(channelA)
    }))

  it.effect("a 5xx on the registration is not taken for a missing scope; the commands are registered once Discord answers", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      yield* fake.script("PUT", /\/commands$/, [unavailable, unavailable])
      const started = yield* Clock.currentTimeMillis
      yield* Discord.connect(settingsFor(fake), { stateDirectory: yield* tempDir }).pipe(Effect.provide(logs.layer))
      const warning = yield* logs.waitFor(/slash commands/)
      expect(warning).toContain("503")
      expect(warning).not.toMatch(/re-invite|applications\.commands/)
      yield* advanceTo(started + 1_000)
      yield* registered(fake)
      expect(registrations(fake).map((record) => record.status)).toEqual([503, 503, 200])
    }))

  it.effect("a long 429 on the registration is logged once, saying how long, and the registration waits that long, not forever", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId, channelIds: [channelA] })
      yield* fake.script("PUT", /\/commands$/, [rateLimited(3_600)])
      const started = yield* Clock.currentTimeMillis
      yield* Discord.connect(settingsFor(fake), { stateDirectory: yield* tempDir }).pipe(Effect.provide(logs.layer))
      expect(yield* logs.waitFor(/slash commands/)).toContain("rate limited by Discord for 3601 s")
      yield* advanceTo(started + 3_600_000 + offset)
      yield* registered(fake)
      expect(registrations(fake).map((record) => record.status)).toEqual([429, 200])
      expect(logs.lines.filter((line) => line.startsWith("WARN") && line.includes("slash commands"))).toHaveLength(1)
    }))
})
