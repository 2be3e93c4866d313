/**
 * `planckclaw schedule add | list | remove` through the built command, as a
 * user runs it (issue 51): entries stored in the agent's memory directory,
 * listed with their next run, removed by id; bad expressions, past times,
 * dates that do not exist, intervals no date can hold, unknown destinations
 * and a Discord destination without a bot refused with the reason (exit 2),
 * nothing written; an entry written by hand whose message the agent would
 * refuse is named by list.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Cli from "../support/Cli.js"
import { tempDir } from "../support/Sandbox.js"

const DAY = 86_400_000

describe("planckclaw schedule", () => {
  it.effect("add, list (text and JSON, with the next run), remove", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      const memory = path.join(cwd, "memory")
      const env = Cli.baseEnv({ PLANCKCLAW_HOME: cwd, PLANCKCLAW_DIR: memory })
      const schedule = (...args: Array<string>) => Cli.run(["schedule", ...args], { cwd, env })

      const daily = yield* schedule("add", "--cron", "0 9 * * *", "--tz", "Europe/Paris", "--to", "none", "summarise the news")
      expect(daily.stderr).toBe("")
      expect(daily.code).toBe(0)
      expect(daily.stdout).toMatch(/^added [0-9a-f]{8}: cron "0 9 \* \* \*" \(Europe\/Paris\), next \S+T0[78]:00:00\.000Z, to none\n$/)
      const reminder = yield* schedule("add", "--at", "+1h", "--to", "webhook:http://127.0.0.1:9/hook", "call the bank")
      expect(reminder.code).toBe(0)
      const every = yield* schedule("add", "--every", "90s", "check the build")
      expect(every.stdout).toContain("every 1m30s")
      expect(every.stdout).toContain("to terminal")

      const listed = yield* schedule("list", "--json")
      expect(listed.code).toBe(0)
      const entries = JSON.parse(listed.stdout) as ReadonlyArray<{ id: string; text: string; to: string; next: string; created: string }>
      expect(entries.map((entry) => [entry.text, entry.to])).toEqual([
        ["summarise the news", "none"],
        ["call the bank", "webhook:http://127.0.0.1:9/hook"],
        ["check the build", "terminal"]
      ])
      // Each with its next run: within a day for the cron, an hour for the reminder, 90 s after creation for the interval.
      const [cron, at] = entries.map((entry) => Date.parse(entry.next) - Date.now())
      expect(cron).toBeGreaterThan(0)
      expect(cron).toBeLessThanOrEqual(DAY)
      expect(at).toBeGreaterThan(50 * 60_000)
      // Times are kept to the second, the nearest one: "+1h" may land up to half a second past an hour from now.
      expect(at).toBeLessThanOrEqual(60 * 60_000 + 500)
      expect(Date.parse(entries[2]!.next) - Date.parse(entries[2]!.created)).toBe(90_000)
      // The file is the agent's, in its memory directory.
      expect(JSON.parse(fs.readFileSync(path.join(memory, "schedules.json"), "utf8")).entries).toHaveLength(3)

      const text = yield* schedule("list")
      expect(text.stdout.split("\n").filter((line) => line !== "")).toHaveLength(3)
      expect(text.stdout).toContain(`${entries[1]!.id}  at `)
      expect(text.stdout).toContain("last never")

      const removed = yield* schedule("remove", entries[1]!.id)
      expect(removed.code).toBe(0)
      expect(removed.stdout).toContain(`removed ${entries[1]!.id}`)
      const again = yield* schedule("remove", entries[1]!.id)
      expect(again.code).toBe(2)
      expect(again.stderr).toContain(`no schedule entry ${entries[1]!.id}`)
      expect(JSON.parse((yield* schedule("list", "--json")).stdout)).toHaveLength(2)
    }))

  it.effect("refuses with the reason, exit 2, and writes nothing", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      const memory = path.join(cwd, "memory")
      const env = Cli.baseEnv({ PLANCKCLAW_HOME: cwd, PLANCKCLAW_DIR: memory })
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [["--cron", "61 * * * *", "x"], "bad cron expression"],
        [["--cron", "0 9 * * *", "--tz", "Mars/Olympus", "x"], 'unknown time zone "Mars/Olympus"'],
        [["--at", "2020-01-01T09:00:00Z", "x"], "is in the past"],
        [["--every", "0s", "x"], "at least 1s"],
        [["--every", "99999999999d", "x"], 'bad interval "99999999999d": it is over 100 years'],
        [["--at", "+99999999999d", "x"], 'bad interval "99999999999d": it is over 100 years'],
        [["--at", "2027-02-30 09:00", "--tz", "UTC", "x"], 'bad date "2027-02-30 09:00": February 2027 has 28 days'],
        [["--every", "5m", "--at", "+1m", "x"], "exactly one of --cron, --every or --at"],
        [["--every", "5m", "--to", "pager:42", "x"], 'unknown destination "pager:42"'],
        [["--every", "5m", "--to", "discord:123456789012345678", "x"], "no Discord bot is configured (DISCORD_BOT_TOKEN)"]
      ]
      for (const [args, reason] of cases) {
        const refused = yield* Cli.run(["schedule", "add", ...args], { cwd, env })
        expect(refused.code, args.join(" ")).toBe(2)
        expect(refused.stderr, args.join(" ")).toContain(reason)
      }
      expect(fs.existsSync(path.join(memory, "schedules.json"))).toBe(false)
      // A file that does not decode: refused with its path and the reason, left as it was.
      fs.mkdirSync(memory, { recursive: true })
      fs.writeFileSync(path.join(memory, "schedules.json"), "{\"entries\": 3}")
      const bad = yield* Cli.run(["schedule", "list"], { cwd, env })
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain(`${path.join(memory, "schedules.json")} is refused`)
      expect(fs.readFileSync(path.join(memory, "schedules.json"), "utf8")).toBe("{\"entries\": 3}")
      // An interval an older build stored, whose next run no date can hold: refused with the entry and why, not a crash.
      const older = JSON.stringify({ entries: [{ id: "big", when: { _tag: "Every", seconds: 8_639_999_999_913_600 }, text: "x", to: "none", created: "2026-03-07T12:00:00Z" }] })
      fs.writeFileSync(path.join(memory, "schedules.json"), older)
      const listed = yield* Cli.run(["schedule", "list"], { cwd, env })
      expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 2, stderr: expect.stringContaining("entry big: every 8639999999913600 s is over 100 years") })
    }))

  it.effect("a machine whose time zone has no IANA name (TZ=UTC+3): a cron or wall-clock time without --tz is refused, asking for one; the file stays good", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      const memory = path.join(cwd, "memory")
      const env = Cli.baseEnv({ PLANCKCLAW_HOME: cwd, PLANCKCLAW_DIR: memory, TZ: "UTC+3" })
      const schedule = (...args: Array<string>) => Cli.run(["schedule", ...args], { cwd, env })
      for (const when of [["--cron", "0 9 * * *"], ["--at", "09:00"], ["--at", "2030-01-01 09:00"]]) {
        const refused = yield* schedule("add", ...when, "x")
        expect({ code: refused.code, stderr: refused.stderr }, when.join(" ")).toEqual({
          code: 2,
          stderr: expect.stringContaining('this machine\'s time zone (TZ="UTC+3") has no IANA name: give one with --tz (Europe/Paris, UTC)')
        })
      }
      // What needs no zone is added; with --tz, so is the cron; and the file decodes.
      for (const when of [["--every", "5m"], ["--at", "+10m"], ["--cron", "0 9 * * *", "--tz", "UTC"]]) {
        expect((yield* schedule("add", ...when, "x")).code, when.join(" ")).toBe(0)
      }
      const listed = yield* schedule("list", "--json")
      expect(listed.code).toBe(0)
      expect(JSON.parse(listed.stdout)).toHaveLength(3)
    }))

  it.effect("a message over PLANCKCLAW_MAX_MESSAGE_BYTES (an agent's own config.env's, when lower) is refused saying the limit, exit 2, nothing written; one written by hand is named by list", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      const memory = path.join(cwd, "memory")
      const agents = path.join(cwd, "agents")
      const env = Cli.baseEnv({ PLANCKCLAW_HOME: cwd, PLANCKCLAW_DIR: memory, PLANCKCLAW_AGENTS_DIR: agents, PLANCKCLAW_MAX_MESSAGE_BYTES: "100" })
      const schedule = (...args: Array<string>) => Cli.run(["schedule", "add", "--every", "1h", ...args], { cwd, env })
      const long = yield* schedule("x".repeat(80))
      expect({ code: long.code, stderr: long.stderr }).toEqual({
        code: 2,
        stderr: expect.stringContaining("the message is 80 bytes; the agent takes at most 100 (PLANCKCLAW_MAX_MESSAGE_BYTES)")
      })
      expect(long.stderr).toContain("write at most 79 bytes")
      expect(fs.existsSync(path.join(memory, "schedules.json"))).toBe(false)
      expect((yield* schedule("x".repeat(79))).code).toBe(0)
      // An agent of serve whose config.env lowers it is held to its own.
      fs.mkdirSync(path.join(agents, "alice"), { recursive: true })
      fs.writeFileSync(path.join(agents, "alice", "config.env"), "PLANCKCLAW_MAX_MESSAGE_BYTES=50\n")
      const own = yield* schedule("--agent", "alice", "x".repeat(30))
      expect({ code: own.code, stderr: own.stderr }).toEqual({ code: 2, stderr: expect.stringContaining("the agent takes at most 50 (PLANCKCLAW_MAX_MESSAGE_BYTES)") })
      expect(fs.existsSync(path.join(agents, "alice", "schedules.json"))).toBe(false)
      expect((yield* schedule("--agent", "alice", "x".repeat(29))).code).toBe(0)
      // One written by hand (or before the limit was lowered) is named by list, its text and JSON; the others are not.
      const file = path.join(memory, "schedules.json")
      const written = JSON.parse(fs.readFileSync(file, "utf8"))
      const created = new Date().toISOString()
      written.entries.push({ id: "big1", when: { _tag: "Every", seconds: 3600 }, text: "x".repeat(90), to: "none", created })
      fs.writeFileSync(file, JSON.stringify(written))
      const refusal = "the message is 90 bytes; the agent takes at most 100 (PLANCKCLAW_MAX_MESSAGE_BYTES), the 17 bytes of its mark " +
        '"[scheduled big1] " included, so it would be refused at every firing: write at most 83 bytes'
      const listed = yield* Cli.run(["schedule", "list"], { cwd, env })
      expect(listed.code).toBe(0)
      const lines = listed.stdout.trim().split("\n")
      expect(lines).toHaveLength(2)
      expect(lines[0]).not.toContain("REFUSED")
      expect(lines[1]).toMatch(/^big1 .*"x{90}"  REFUSED: /)
      expect(lines[1]!.endsWith(`REFUSED: ${refusal}`)).toBe(true)
      const json = JSON.parse((yield* Cli.run(["schedule", "list", "--json"], { cwd, env })).stdout) as ReadonlyArray<{ id: string; refused: string | null }>
      expect(json.map((entry) => entry.refused)).toEqual([null, refusal])
      // Held to the agent's own lower limit, as serve holds it.
      const alice = JSON.parse((yield* Cli.run(["schedule", "list", "--agent", "alice", "--json"], { cwd, env })).stdout) as ReadonlyArray<{ refused: string | null }>
      expect(alice.map((entry) => entry.refused)).toEqual([null])
    }))

  it.effect("--agent ID: the schedule of that agent of serve; its default destination is memory only, and terminal is refused", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      const agents = path.join(cwd, "agents")
      const env = Cli.baseEnv({ PLANCKCLAW_HOME: cwd, PLANCKCLAW_DIR: path.join(cwd, "memory"), PLANCKCLAW_AGENTS_DIR: agents })
      const missing = yield* Cli.run(["schedule", "add", "--agent", "alice", "--every", "5m", "x"], { cwd, env })
      expect(missing.code).toBe(1)
      expect(missing.stderr).toContain("no agent alice")
      fs.mkdirSync(path.join(agents, "alice"), { recursive: true })
      const added = yield* Cli.run(["schedule", "add", "--agent", "alice", "--every", "5m", "check"], { cwd, env })
      expect(added.stdout).toContain("to none")
      const terminal = yield* Cli.run(["schedule", "add", "--agent", "alice", "--every", "5m", "--to", "terminal", "x"], { cwd, env })
      expect(terminal.code).toBe(2)
      expect(terminal.stderr).toContain("which has no terminal")
      const entries = JSON.parse(fs.readFileSync(path.join(agents, "alice", "schedules.json"), "utf8")).entries
      expect(entries).toMatchObject([{ text: "check", to: "none" }])
    }))
})
