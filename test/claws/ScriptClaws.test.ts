import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect } from "@effect/vitest"
import { helperPid, it } from "../support/ProcessServices.js"
import { Config, ConfigProvider, Duration, Effect, Result, Fiber, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { unknownTool } from "../../src/ports/Claws.js"
import * as ConfigErrors from "../../src/config/ConfigErrors.js"
import * as ChildProcess from "../../src/runtime/process/ChildProcess.js"
import * as Scripts from "../../src/claws/ScriptClaws.js"
import { executableProblem } from "../../src/pipes/ExternalBridge.js"
import { captureLogs } from "../support/LogCapture.js"
import * as Sandbox from "../support/Sandbox.js"

const shippedClaws = fileURLToPath(new URL("../../claws", import.meta.url))

const tempDir = Sandbox.tempDir("planckclaw-claws-")
const { tool } = Sandbox

const writeClaw = (dir: string, file: string, body: string, options: { readonly executable?: boolean } = {}) =>
  Effect.sync(() => {
    const path = Path.join(dir, file)
    Fs.writeFileSync(path, body)
    Fs.chmodSync(path, options.executable === false ? 0o644 : 0o755)
  })

const settings = (directory: string, overrides: Partial<Scripts.ScriptsConfig> = {}): Scripts.ScriptsConfig => ({
  directory,
  timeout: Duration.seconds(30),
  outputMax: 16_384,
  withheldSecrets: [],
  ...overrides
})

const names = (catalog: { readonly tools: ReadonlyArray<{ readonly name: string }> }) =>
  catalog.tools.map((t) => t.name)

/** Real time on purpose: waiting for a file from a child, or for the OS to reap. */
const eventually = (check: () => boolean) => Sandbox.settles(check, "20 millis")

const readPid = (file: string) =>
  eventually(() => Fs.existsSync(file) && Fs.readFileSync(file, "utf8").endsWith("\n")).pipe(
    Effect.map(() => Number(Fs.readFileSync(file, "utf8").trim()))
  )

/** Sets environment variables for one test and restores them afterwards. */
const withEnv = (vars: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const saved = Object.fromEntries(Object.keys(vars).map((key) => [key, process.env[key]]))
      Object.assign(process.env, vars)
      return saved
    }),
    (saved) =>
      Effect.sync(() => {
        for (const [key, value] of Object.entries(saved)) {
          if (value === undefined) delete process.env[key]
          else process.env[key] = value
        }
      })
  )

const dicePattern = /^Rolled (\d+)d(\d+): ([\d, ]+)\nTotal: (\d+)$/

const parseRolls = (content: string) => {
  const match = dicePattern.exec(content)
  expect(match, content).not.toBeNull()
  const [, count, sides, rolls, total] = match ?? []
  return {
    count: Number(count),
    sides: Number(sides),
    rolls: (rolls ?? "").split(", ").map(Number),
    total: Number(total)
  }
}

describe("Scripts claws: discovery", () => {
  it.effect("discovers the shipped claws in file-name order", () =>
    Effect.gen(function*() {
      const claws = yield* Scripts.make(settings(shippedClaws))
      const catalog = yield* claws.list
      expect(catalog.problems).toEqual([])
      expect(names(catalog)).toEqual(["roll_dice", "system_status", "get_time"])
      const dice = catalog.tools[0]
      expect(dice?.input_schema["properties"]).toMatchObject({
        sides: { type: "integer", minimum: 2, maximum: 1000, default: 6 },
        count: { type: "integer", minimum: 1, maximum: 100, default: 1 }
      })
    }))

  it.effect("runs the shipped get_time and system_status claws", () =>
    Effect.gen(function*() {
      const claws = yield* Scripts.make(settings(shippedClaws))
      const before = Math.floor(Date.now() / 1000)
      const time = yield* claws.call("get_time", {})
      expect(time.isError).toBe(false)
      const match = /^Unix timestamp: (\d+)\nISO-8601 UTC: (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$/.exec(time.content)
      expect(match, time.content).not.toBeNull()
      const seconds = Number(match?.[1])
      expect(seconds).toBeGreaterThanOrEqual(before)
      expect(new Date(match?.[2] ?? "").getTime() / 1000).toBe(seconds)

      const status = yield* claws.call("system_status", {})
      expect(status.isError).toBe(false)
      expect(status.content).toMatch(/^Uptime: \d+d \d+h \d+m/)
      expect(status.content).toMatch(/\nRAM: \d+ MiB total, \d+ MiB free/)
      expect(status.content).toMatch(/\nLoad average \(1 min\): [\d.]+/)
      expect(status.content).toMatch(/\nProcesses: \d+$/)
    }))

  it.effect("skips malformed #TOOLS: lines with file:line and keeps every good tool", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(
        dir,
        "a.sh",
        [
          "#!/bin/sh",
          "#TOOLS:{\"name\":\"alpha\"}",
          "#TOOLS:{not json",
          "#TOOLS:{\"name\":\"bad name!\"}",
          "#TOOLS:{\"description\":\"no name\"}",
          "#TOOLS:[{\"name\":\"beta\"},{\"name\":\"\"}]",
          "#TOOLS:42",
          "  #TOOLS:{\"name\":\"indented_is_not_a_declaration\"}",
          "echo a"
        ].join("\n")
      )
      yield* writeClaw(dir, "b.sh", `#!/bin/sh\n${tool("gamma")}\r\necho b\n`)
      const claws = yield* Scripts.make(settings(dir))
      const catalog = yield* claws.list

      expect(names(catalog)).toEqual(["alpha", "beta", "gamma"])
      // Missing description and input_schema get the port's defaults.
      expect(catalog.tools[0]).toEqual({ name: "alpha", description: "", input_schema: { type: "object", properties: {} } })
      const a = Path.join(dir, "a.sh")
      const b = Path.join(dir, "b.sh")
      expect(catalog.problems.map((p) => p.source)).toEqual([`${a}:3`, `${a}:4`, `${a}:5`, `${a}:6`, `${a}:7`, b])
      const [json, badName, missingName, badItem, notObject, crlf] = catalog.problems.map((p) => p.reason)
      // Its tool is read, but the CRLF keeps it from running: said so.
      expect(crlf).toContain("Windows line endings (CRLF)")
      expect(json).toMatch(/^invalid JSON after #TOOLS:/)
      expect(badName).toContain("tool name must match ^[A-Za-z0-9_-]{1,64}$")
      expect(missingName).toBe("invalid tool definition: Missing key (at name)")
      expect(badItem).toMatch(/^item 2: invalid tool definition:[\s\S]*tool name must match/)
      expect(notObject).toMatch(/^invalid tool definition:[\s\S]*Expected/)
    }))

  it.effect("reads a claw saved with a byte order mark, and says to save it without one", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(dir, "bom.sh", `\ufeff${tool("marked")}\necho marked\n`)
      const catalog = yield* (yield* Scripts.make(settings(dir))).list
      expect(names(catalog)).toEqual(["marked"])
      expect(catalog.problems).toEqual([{
        source: `${Path.join(dir, "bom.sh")}:1`,
        reason: "the file starts with a byte order mark (U+FEFF): save it as UTF-8 without one"
      }])
    }))

  it.effect("keeps the first declaration of a duplicate tool and names both files", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(dir, "a.sh", `#!/bin/sh\n${tool("dup", "first")}\necho from-a\n`)
      yield* writeClaw(dir, "b.sh", `#!/bin/sh\n${tool("dup", "second")}\n${tool("other")}\necho from-b\n`)
      const claws = yield* Scripts.make(settings(dir))
      const catalog = yield* claws.list
      expect(catalog.tools.map((t) => [t.name, t.description])).toEqual([["dup", "first"], ["other", "other tool"]])
      expect(catalog.problems).toEqual([{
        source: `${Path.join(dir, "b.sh")}:2`,
        reason: `tool "dup" is already declared at ${Path.join(dir, "a.sh")}:2; the first declaration wins`
      }])
      expect(yield* claws.call("dup", {})).toEqual({ content: "from-a", isError: false })
    }))

  it.effect("leaves out a tool named as an MCP server's (mcp__...), with why, though no mcp.json names a server", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(dir, "a.sh", `#!/bin/sh\n${tool("mcp__files__read")}\n${tool("read")}\necho from-a\n`)
      const claws = yield* Scripts.make(settings(dir))
      const catalog = yield* claws.list
      expect(names(catalog)).toEqual(["read"])
      expect(catalog.problems).toEqual([{
        source: `${Path.join(dir, "a.sh")}:2`,
        reason: `tool "mcp__files__read" left out: names starting mcp__ are the MCP servers' (mcp.json)`
      }])
      expect(yield* claws.call("mcp__files__read", {})).toEqual(unknownTool("mcp__files__read"))
    }))

  // The running agent watches the directory; `planckclaw tools` stats it all.
  for (const [how, make] of [["stat scan", Scripts.make], ["watched", Scripts.makeWatched]] as const) {
    it.effect(`${how}: sees an added, an edited and a removed claw on the very next list`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        yield* writeClaw(dir, "one.sh", `#!/bin/sh\n${tool("one")}\n`)
        const claws = yield* make(settings(dir))
        expect(names(yield* claws.list)).toEqual(["one"])

        yield* writeClaw(dir, "two.sh", `#!/bin/sh\n${tool("two")}\n`)
        expect(names(yield* claws.list)).toEqual(["one", "two"])

        // Same size and inode: only the mtime tells this edit apart.
        yield* Effect.sync(() => Fs.writeFileSync(Path.join(dir, "one.sh"), `#!/bin/sh\n${tool("uno")}\n`))
        expect(names(yield* claws.list)).toEqual(["uno", "two"])

        yield* Effect.sync(() => Fs.rmSync(Path.join(dir, "two.sh")))
        expect(names(yield* claws.list)).toEqual(["uno"])
      }))

    it.effect(`${how}: sees a same-size rewrite whose old mtime was put back (cp -p, tar x)`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const file = Path.join(dir, "cached.sh")
        const old = new Date("2020-01-01T00:00:00Z")
        yield* writeClaw(dir, "cached.sh", `#!/bin/sh\n${tool("aaaa")}\n`)
        yield* Effect.sync(() => Fs.utimesSync(file, old, old))
        const claws = yield* make(settings(dir))
        expect(names(yield* claws.list)).toEqual(["aaaa"])

        // Inode, size and mtime are those of the version read: only the
        // ctime, which no one can set back, tells this rewrite apart.
        yield* Effect.sync(() => {
          Fs.writeFileSync(file, `#!/bin/sh\n${tool("bbbb")}\n`)
          Fs.utimesSync(file, old, old)
        })
        expect(names(yield* claws.list)).toEqual(["bbbb"])
      }))

    it.effect(`${how}: re-reads a recently modified claw even when its identity is unchanged`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const file = Path.join(dir, "fresh.sh")
        // Two edits within one coarse timestamp tick (1 s on some filesystems)
        // leave the same mtime: simulate that by pinning a recent mtime.
        const recent = new Date()
        yield* writeClaw(dir, "fresh.sh", `#!/bin/sh\n${tool("aaaa")}\n`)
        yield* Effect.sync(() => Fs.utimesSync(file, recent, recent))
        const claws = yield* make(settings(dir))
        expect(names(yield* claws.list)).toEqual(["aaaa"])
        yield* Effect.sync(() => {
          Fs.writeFileSync(file, `#!/bin/sh\n${tool("bbbb")}\n`)
          Fs.utimesSync(file, recent, recent)
        })
        expect(names(yield* claws.list)).toEqual(["bbbb"])
      }))

    it.effect(`${how}: sees an in-place edit of a long-unchanged claw on the very next list`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const file = Path.join(dir, "old.sh")
        const old = new Date("2020-01-01T00:00:00Z")
        yield* writeClaw(dir, "old.sh", `#!/bin/sh\n${tool("aaaa")}\n`)
        yield* Effect.sync(() => Fs.utimesSync(file, old, old))
        const claws = yield* make(settings(dir))
        expect(names(yield* claws.list)).toEqual(["aaaa"])
        expect(names(yield* claws.list)).toEqual(["aaaa"])
        // Written and listed in the same tick: the watcher has not been told yet.
        yield* Effect.sync(() => Fs.writeFileSync(file, `#!/bin/sh\n${tool("bbbb")}\n`))
        expect(names(yield* claws.list)).toEqual(["bbbb"])
      }))
  }

  it.effect("reports an unreadable claw and a missing directory as problems, not failures", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(dir, "good.sh", `#!/bin/sh\n${tool("good")}\n`)
      yield* Effect.sync(() => Fs.symlinkSync(Path.join(dir, "nowhere"), Path.join(dir, "dangling.sh")))
      yield* writeClaw(dir, ".hidden.sh", `#!/bin/sh\n${tool("hidden")}\n`)
      yield* writeClaw(dir, "notes.txt", `${tool("not_a_claw")}\n`)
      const claws = yield* Scripts.make(settings(dir))
      const catalog = yield* claws.list
      expect(names(catalog)).toEqual(["good"])
      expect(catalog.problems).toHaveLength(1)
      expect(catalog.problems[0]?.source).toBe(Path.join(dir, "dangling.sh"))
      expect(catalog.problems[0]?.reason).toMatch(/^cannot read: ENOENT/)

      const missing = yield* Scripts.make(settings(Path.join(dir, "missing")))
      const empty = yield* missing.list
      expect(empty.tools).toEqual([])
      expect(empty.problems[0]?.reason).toMatch(/^cannot read the claws directory: ENOENT/)
    }))

  it.effect("logs each problem once while it lasts", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const logs = yield* captureLogs
      yield* writeClaw(dir, "a.sh", `#!/bin/sh\n${tool("fine")}\n#TOOLS:{oops\n`)
      const claws = yield* Scripts.make(settings(dir))
      yield* Effect.gen(function*() {
        yield* claws.list
        yield* claws.list
        yield* claws.call("fine", {})
        expect(logs.lines).toHaveLength(1)
        expect(logs.lines[0]).toMatch(/^WARN /)
        expect(logs.lines[0]).toContain(`${Path.join(dir, "a.sh")}:3`)

        yield* writeClaw(dir, "a.sh", `#!/bin/sh\n${tool("fine")}\n`)
        expect((yield* claws.list).problems).toEqual([])
        yield* writeClaw(dir, "a.sh", `#!/bin/sh\n${tool("fine")}\n#TOOLS:{oops\n`)
        yield* claws.list
        expect(logs.lines).toHaveLength(2)
        expect(logs.lines[1]).toMatch(/^WARN /)
      }).pipe(Effect.provide(logs.layer))
    }))
})

describe("Scripts claws: calls", () => {
  it.effect("passes the tool name and the compact input JSON, in a private directory of its own, with stdin closed", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(
        dir,
        "echo.sh",
        `#!/bin/sh\n${tool("echo_args")}\nprintf 'name=%s\\ninput=%s\\ncwd=%s %s\\n\\n\\n' "$1" "$2" "$(pwd)" "$(stat -c %a .)"\ncat\n`
      )
      const claws = yield* Scripts.make(settings(dir))
      const call = () => claws.call("echo_args", { text: "hi there\n\"quoted\"", n: 1, nested: { ok: true } })
      const first = yield* call()
      const [head, cwdLine] = [first.content.slice(0, first.content.lastIndexOf("\n")), first.content.split("\n").pop()!]
      expect(head).toBe(`name=echo_args\ninput={"text":"hi there\\n\\"quoted\\"","n":1,"nested":{"ok":true}}`)
      const [cwd, mode] = cwdLine.slice("cwd=".length).split(" ")
      // Not the agent's directory (where config.env lives): a fresh one, owner-only, gone after the call.
      expect(cwd).not.toBe(process.cwd())
      expect(mode).toBe("700")
      expect(Fs.existsSync(cwd!)).toBe(false)
      expect((yield* call()).content).not.toContain(`cwd=${cwd} `)
    }))

  it.effect("makes the claw's private directory in this process's TMPDIR, though the spawn helper has none", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const tmp = yield* tempDir
      yield* writeClaw(dir, "where.sh", `#!/bin/sh\n${tool("where")}\npwd\n`)
      yield* withEnv({ TMPDIR: tmp })
      const claws = yield* Scripts.make(settings(dir))
      const result = yield* claws.call("where", {})
      expect(result.isError).toBe(false)
      expect(Path.dirname(result.content)).toBe(Fs.realpathSync(tmp))
      expect(Fs.readdirSync(tmp)).toEqual([])
    }))

  it.effect("tells a claw its working directory in PWD, and passes no OLDPWD of the agent's", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // A directory of the agent's, which a claw that trusts $OLDPWD (`cd -`) would act on.
      yield* withEnv({ OLDPWD: dir })
      // awk, not a shell: a shell would put PWD right itself, and a claw in another language reads what it was given.
      const environ = 'BEGIN { print ENVIRON["PWD"]; print ("OLDPWD" in ENVIRON) ? "OLDPWD=" ENVIRON["OLDPWD"] : "no OLDPWD" }'
      yield* writeClaw(dir, "environ.sh", `#!/usr/bin/awk -f\n${tool("environ")}\n${environ}\n`)
      yield* writeClaw(dir, "where.sh", `#!/bin/sh\n${tool("where")}\ncd "$PWD" && pwd -P\n`)
      const claws = yield* Scripts.make(settings(dir))
      const environResult = yield* claws.call("environ", {})
      const where = yield* claws.call("where", {})
      expect(environResult.isError).toBe(false)
      const [pwd, oldpwd] = environResult.content.split("\n")
      expect(Path.basename(pwd!)).toMatch(/^planckclaw-claw-\d+-/)
      expect(oldpwd).toBe("no OLDPWD")
      expect(where.content).toMatch(/\/planckclaw-claw-\d+-[^/]+$/)
    }))

  it.effect("runs a claw without the execute bit through /bin/sh", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(dir, "plain.sh", `${tool("plain")}\necho "sh ran $1"\n`, { executable: false })
      const claws = yield* Scripts.make(settings(dir))
      expect(yield* claws.call("plain", {})).toEqual({ content: "sh ran plain", isError: false })
    }))

  it.effect("tells a failed claw without the execute bit that it ran with /bin/sh, not its #! line", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // Python, as a copy that lost the mode leaves it: sh fails on its first statement.
      yield* writeClaw(dir, "py.sh", `#!/usr/bin/env python3\n${tool("py")}\nimport sys\nprint(sys.argv[1])\n`, { executable: false })
      yield* writeClaw(dir, "sh.sh", `#!/bin/sh\n${tool("plain_fail")}\nexit 4\n`, { executable: false })
      const claws = yield* Scripts.make(settings(dir))
      const py = yield* claws.call("py", {})
      expect(py.isError).toBe(true)
      expect(py.content.split("\n").pop()).toBe(
        "[tool py: it is not executable, so it ran with /bin/sh, not with its #! line (/usr/bin/env python3): make it executable (chmod +x)]"
      )
      // A shell script needs no hint: /bin/sh is what its line names.
      expect(yield* claws.call("plain_fail", {})).toEqual({ content: "[tool plain_fail exited with code 4]", isError: true })
    }))

  it.effect("says which #! line keeps a claw from starting, not the shell's \"not found\" about the claw", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const logs = yield* captureLogs
      yield* writeClaw(dir, "missing.sh", `#!/nonexistent/bash\n${tool("missing")}\necho hi\n`)
      yield* writeClaw(dir, "relative.sh", `#! bash -e\n${tool("relative")}\necho hi\n`)
      yield* writeClaw(dir, "crlf.sh", `#!/bin/sh\r\n${tool("crlf")}\r\necho hi\r\n`)
      yield* writeClaw(dir, "notexec.sh", `#!${Path.join(dir, "data")}\n${tool("notexec")}\necho hi\n`)
      Fs.writeFileSync(Path.join(dir, "data"), "plain data\n", { mode: 0o644 })
      // A claw whose own command is missing exits 127 too: its interpreter is fine, its stderr says what was not found.
      yield* writeClaw(dir, "inner.sh", `#!/bin/sh\n${tool("inner")}\nno-such-command-here\n`)
      const claws = yield* Scripts.make(settings(dir))
      const call = (name: string) => claws.call(name, {}).pipe(Effect.provide(logs.layer))
      const notStarted = (name: string, reason: string) => ({ content: `Tool ${name} could not be started: ${reason}`, isError: true })
      expect(yield* call("missing")).toEqual(
        notStarted("missing", "the interpreter on its #! line, /nonexistent/bash, does not exist")
      )
      expect(yield* call("relative")).toEqual(notStarted("relative", "the interpreter on its #! line, bash, is not an absolute path"))
      expect(yield* call("crlf")).toEqual(
        notStarted("crlf", "its #! line ends with a carriage return (Windows line endings): convert them (dos2unix, or sed -i 's/\\r$//')")
      )
      const notExec = yield* call("notexec")
      expect(notExec.content).toMatch(/^Tool notexec could not be started: the interpreter on its #! line, .*\/data, cannot be executed \(EACCES/)
      const inner = yield* call("inner")
      expect(inner.isError).toBe(true)
      expect(inner.content).toMatch(/no-such-command-here: not found\n\[tool inner exited with code 127\]$/)
      // The log names the claw's file, for the user who has to fix it.
      expect(logs.lines.some((line) => line.includes("claw missing could not be started") && line.includes("missing.sh"))).toBe(true)
    }))

  it.effect("reads a #! line as the bytes the kernel execs, as a bridge's is read: a name in UTF-8 or in none", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const bytes = (...parts: ReadonlyArray<string | Uint8Array | ReadonlyArray<number>>) =>
        Buffer.concat(parts.map((part) => typeof part === "string" ? Buffer.from(part) : Uint8Array.from(part)))
      // /bin/sh under two names: é in UTF-8, and é in Latin-1 (the byte 0xE9, which is no UTF-8).
      const interpreters = [bytes(dir, "/intérp"), bytes(dir, "/int", [0xe9], "rp")].map((directory) => {
        Fs.mkdirSync(directory)
        const sh = bytes(directory, "/sh")
        Fs.symlinkSync("/bin/sh", sh)
        return sh
      })
      const script = (file: string, interpreter: Buffer, body: string) => {
        Fs.writeFileSync(Path.join(dir, file), bytes("#!", interpreter, `\n${body}`), { mode: 0o755 })
        return Path.join(dir, file)
      }
      for (const [index, interpreter] of interpreters.entries()) {
        // A claw that ran and exited 127 itself: its own error, not its interpreter's.
        script(`claw${index}.sh`, interpreter, `${tool(`runs_${index}`)}\nno-such-command-here\n`)
        expect(executableProblem(script(`bridge${index}.sh`, interpreter, "exit 0\n"))).toBeUndefined()
      }
      const missing = bytes("/nonexistent/intérp")
      script("missing.sh", missing, `${tool("missing")}\necho never\n`)
      const bridge = script("missing-bridge.sh", missing, "exit 0\n")
      const claws = yield* Scripts.make(settings(dir))
      for (const name of ["runs_0", "runs_1"]) {
        expect((yield* claws.call(name, {})).content).toMatch(/no-such-command-here: not found\n\[tool runs_\d exited with code 127\]$/)
      }
      // The same name in both messages.
      expect((yield* claws.call("missing", {})).content).toBe(
        "Tool missing could not be started: the interpreter on its #! line, /nonexistent/intérp, does not exist"
      )
      expect(executableProblem(bridge)).toBe(`bridge ${bridge} names "/nonexistent/intérp" on its #! line, which is not an executable file`)
    }))

  it.effect("gives an empty output a visible placeholder", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(dir, "quiet.sh", `#!/bin/sh\n${tool("quiet")}\nexit 0\n`)
      const claws = yield* Scripts.make(settings(dir))
      expect(yield* claws.call("quiet", {})).toEqual({ content: "(no output)", isError: false })
    }))

  it.effect("does not pass the API key or the bot token to a claw, under any variable name", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* withEnv({
        ANTHROPIC_API_KEY: "test-key-not-secret",
        DISCORD_BOT_TOKEN: "test-token-not-secret",
        PLANCKCLAW_TEST_KEY_COPY: "test-key-not-secret",
        PLANCKCLAW_TEST_TOKEN_COPY: "test-token-not-secret",
        PLANCKCLAW_TEST_CONFIG_COPY: "test-config-secret-not-secret",
        PLANCKCLAW_TEST_VISIBLE: "visible"
      })
      yield* writeClaw(dir, "env.sh", `#!/bin/sh\n${tool("print_env")}\nenv\n`)
      const claws = yield* Scripts.make(
        settings(dir, { withheldSecrets: [Redacted.make("test-config-secret-not-secret")] })
      )
      const result = yield* claws.call("print_env", {})
      expect(result.isError).toBe(false)
      expect(result.content).toContain("PLANCKCLAW_TEST_VISIBLE=visible")
      expect(result.content).toContain(`PATH=${process.env["PATH"]}`)
      for (const hidden of ["ANTHROPIC_API_KEY", "DISCORD_BOT_TOKEN", "PLANCKCLAW_TEST_KEY_COPY", "PLANCKCLAW_TEST_TOKEN_COPY"]) {
        expect(result.content).not.toContain(hidden)
      }
      expect(result.content).not.toContain("PLANCKCLAW_TEST_CONFIG_COPY")
      expect(result.content).not.toContain("not-secret")
    }))

  it.effect("reports a non-zero exit with stdout, a stderr excerpt and the code", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(dir, "fail.sh", `#!/bin/sh\n${tool("fail")}\necho partial\necho boom >&2\nexit 3\n`)
      const claws = yield* Scripts.make(settings(dir))
      expect(yield* claws.call("fail", {})).toEqual({
        content: "partial\nstderr: boom\n[tool fail exited with code 3]",
        isError: true
      })
    }))

  it.effect("truncates a flood with a marker and stops the writer", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pidFile = Path.join(dir, "pid")
      yield* writeClaw(dir, "flood.sh", `#!/bin/sh\n${tool("flood")}\necho $$ > ${pidFile}\nyes 0123456789\n`)
      const claws = yield* Scripts.make(settings(dir, { outputMax: 1000 }))
      const result = yield* claws.call("flood", {})
      expect(result.isError).toBe(false)
      expect(result.content.endsWith("\n[output truncated at 1000 bytes]")).toBe(true)
      const kept = result.content.slice(0, -"\n[output truncated at 1000 bytes]".length)
      expect(kept.length).toBeLessThanOrEqual(1000)
      expect(kept.startsWith("0123456789\n0123456789\n")).toBe(true)
      const pgid = Number(Fs.readFileSync(pidFile, "utf8").trim())
      expect(yield* eventually(() => Sandbox.groupGone(pgid))).toBe(true)
    }))

  it.effect("stops a claw that floods stderr at once, not at its timeout, and says so with the stdout it printed", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pidFile = Path.join(dir, "pid")
      yield* writeClaw(dir, "noisy.sh", `#!/bin/sh\n${tool("noisy")}\necho $$ > ${pidFile}\necho started\nyes complaint >&2\n`)
      const claws = yield* Scripts.make(settings(dir))
      const fiber = yield* Effect.forkChild(claws.call("noisy", {}))
      // The TestClock never moves: only the flood can end the call (the bound is real time, a hang's readable failure).
      const result = yield* Sandbox.onLiveClock(Sandbox.within("the answer of a claw flooding stderr")(Fiber.join(fiber)))
      expect(result.isError).toBe(true)
      // What it printed, the first 2 KiB of its stderr (marked as cut), and why it was stopped.
      expect(result.content.startsWith("started\nstderr: complaint\ncomplaint\n")).toBe(true)
      const lines = result.content.split("\n")
      expect(lines.at(-2)?.endsWith(" […]")).toBe(true)
      expect(lines.at(-1)).toBe(`[tool noisy was stopped: it wrote more than ${2048 + 1024 * 1024} bytes to stderr]`)
      expect(result.content.length).toBeLessThan(4096)
      const pgid = Number(Fs.readFileSync(pidFile, "utf8").trim())
      expect(yield* eventually(() => Sandbox.groupGone(pgid))).toBe(true)
    }))

  it.effect("decodes invalid UTF-8 with replacement characters and never cuts a character in half", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(dir, "bytes.sh", `#!/bin/sh\n${tool("bytes")}\n${tool("accents")}\n` + [
        "case \"$1\" in",
        "  bytes) printf 'ok \\377\\376 end\\n' ;;",
        "  accents) printf 'abcd\\303\\251fgh' ;;",
        "esac"
      ].join("\n"))
      const claws = yield* Scripts.make(settings(dir, { outputMax: 5 }))
      expect(yield* claws.call("bytes", {})).toEqual({
        content: "ok \uFFFD\n[output truncated at 5 bytes]",
        isError: false
      })
      const wide = yield* Scripts.make(settings(dir))
      expect(yield* wide.call("bytes", {})).toEqual({ content: "ok \uFFFD\uFFFD end", isError: false })
      // "é" is two bytes at offsets 4 and 5: the cap at 5 drops it whole.
      expect(yield* claws.call("accents", {})).toEqual({
        content: "abcd\n[output truncated at 5 bytes]",
        isError: false
      })
    }))

  it.effect("times out a hanging claw on the clock and kills its whole process group", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pidFile = Path.join(dir, "pid")
      yield* writeClaw(dir, "hang.sh", `#!/bin/sh\n${tool("hang")}\necho $$ > ${pidFile}\nsleep 1000 & sleep 1000; wait\n`)
      const claws = yield* Scripts.make(settings(dir))
      const fiber = yield* Effect.forkChild(claws.call("hang", {}))
      const pgid = yield* readPid(pidFile)
      expect(Sandbox.groupGone(pgid)).toBe(false)

      yield* TestClock.adjust("29 seconds")
      expect(Sandbox.groupGone(pgid)).toBe(false)
      yield* TestClock.adjust("2 seconds")
      expect(yield* Fiber.join(fiber)).toEqual({ content: "Tool hang timed out after 30s", isError: true })
      // The main process is reaped by us; its orphaned `sleep` by init.
      expect(yield* eventually(() => Sandbox.groupGone(pgid))).toBe(true)
    }))

  it.effect("kills the process group when the agent stops mid-call", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pidFile = Path.join(dir, "pid")
      yield* writeClaw(dir, "hang.sh", `#!/bin/sh\n${tool("hang")}\necho $$ > ${pidFile}\nsleep 1000 & sleep 1000; wait\n`)
      const claws = yield* Scripts.make(settings(dir))
      const fiber = yield* Effect.forkChild(claws.call("hang", {}))
      const pgid = yield* readPid(pidFile)
      yield* Fiber.interrupt(fiber)
      expect(yield* eventually(() => Sandbox.groupGone(pgid))).toBe(true)
    }))

  it.effect("tells the model a claw was cut short when the spawn helper running it dies, naming the signal, not the claw's path", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const logs = yield* captureLogs
      const pidFile = Path.join(dir, "pid")
      yield* writeClaw(dir, "hang.sh", `#!/bin/sh\n${tool("hang")}\necho $$ > ${pidFile}\nsleep 1000\n`)
      const claws = yield* Scripts.make(settings(dir))
      const fiber = yield* Effect.forkChild(claws.call("hang", {}).pipe(Effect.provide(logs.layer)))
      const pgid = yield* readPid(pidFile)
      // As the OOM killer would.
      process.kill((yield* helperPid)!, "SIGKILL")
      expect(yield* Fiber.join(fiber)).toEqual({
        content: "Tool hang was cut short: the process that runs claws (planckclaw's spawn helper) was killed by SIGKILL " +
          "during the call, and what the claw started was stopped with it; it may have done part of its work",
        isError: true
      })
      // The log names the file, for the user.
      expect(logs.lines.some((line) => line.includes("claw hang was cut short") && line.includes(Path.join(dir, "hang.sh")))).toBe(true)
      expect(yield* eventually(() => Sandbox.groupGone(pgid))).toBe(true)
    }))

  it.effect("answers an unknown tool without running anything", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(dir, "a.sh", `#!/bin/sh\n${tool("known")}\n`)
      const claws = yield* Scripts.make(settings(dir))
      expect(yield* claws.call("nope", {})).toEqual(unknownTool("nope"))
      expect(unknownTool("nope").content).toBe("Unknown tool: nope")
    }))

  it.effect("answers an input too large for argv with an error result", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* writeClaw(dir, "a.sh", `#!/bin/sh\n${tool("big")}\necho ran\n`)
      const claws = yield* Scripts.make(settings(dir))
      expect(yield* claws.call("big", { text: "x".repeat(200_000) })).toEqual({
        content: "Tool big could not be started: its input is too large to pass as a command-line argument",
        isError: true
      })
    }))

  it.effect("rejects input that is not a JSON object without spawning", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const ran = Path.join(dir, "ran")
      yield* writeClaw(dir, "a.sh", `#!/bin/sh\n${tool("picky")}\ntouch ${ran}\necho ran\n`)
      const claws = yield* Scripts.make(settings(dir))
      for (const [input, kind] of [["text", "a string"], [[1, 2], "an array"], [null, "null"], [7, "a number"]] as const) {
        expect(yield* claws.call("picky", input)).toEqual({
          content: `Tool picky: input must be a JSON object, got ${kind}`,
          isError: true
        })
      }
      expect(Fs.existsSync(ran)).toBe(false)
      expect(yield* claws.call("picky", {})).toEqual({ content: "ran", isError: false })
      expect(Fs.existsSync(ran)).toBe(true)
    }))
})

describe("Scripts claws: dice.sh", () => {
  it.effect("rejects sides and counts out of bounds with a clear message and exit 1", () =>
    Effect.gen(function*() {
      const claws = yield* Scripts.make(settings(shippedClaws))
      const cases = [
        [{ sides: 1 }, "sides must be an integer from 2 to 1000 (got 1)"],
        [{ sides: 1001 }, "sides must be an integer from 2 to 1000 (got 1001)"],
        [{ count: 0 }, "count must be an integer from 1 to 100 (got 0)"],
        [{ count: 101 }, "count must be an integer from 1 to 100 (got 101)"],
        [{ sides: "six" }, "sides must be an integer from 2 to 1000"],
        [{ sides: 2.5 }, "sides must be an integer from 2 to 1000 (got 2.5)"]
      ] as const
      for (const [input, message] of cases) {
        const result = yield* claws.call("roll_dice", input)
        expect(result.isError).toBe(true)
        expect(result.content).toContain(`stderr: roll_dice: ${message}`)
        expect(result.content).toContain("[tool roll_dice exited with code 1]")
      }
    }))

  it.effect("rolls within range and totals correctly, at the bounds and by default", () =>
    Effect.gen(function*() {
      const claws = yield* Scripts.make(settings(shippedClaws))
      for (const [input, sides, count] of [[{ sides: 20, count: 3 }, 20, 3], [{}, 6, 1], [{ sides: 2, count: 100 }, 2, 100], [
        { sides: 1000, count: 1 },
        1000,
        1
      ]] as const) {
        const result = yield* claws.call("roll_dice", input)
        expect(result.isError).toBe(false)
        const parsed = parseRolls(result.content)
        expect(parsed.sides).toBe(sides)
        expect(parsed.count).toBe(count)
        expect(parsed.rolls).toHaveLength(count)
        for (const roll of parsed.rolls) {
          expect(roll).toBeGreaterThanOrEqual(1)
          expect(roll).toBeLessThanOrEqual(sides)
        }
        expect(parsed.total).toBe(parsed.rolls.reduce((a, b) => a + b, 0))
      }
    }))

  it.effect("parses its input with any spacing when run directly", () =>
    Effect.gen(function*() {
      const outcome = yield* ChildProcess.run({
        command: Path.join(shippedClaws, "dice.sh"),
        args: ["roll_dice", "{ \"sides\" :\t20 ,\n  \"count\":   3 }"],
        cwd: process.cwd(),
        env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
        stdoutMax: 4096,
        stderrMax: 4096,
        floodAllowance: 0
      })
      expect(outcome.exitCode).toBe(0)
      const parsed = parseRolls(Buffer.from(outcome.stdout).toString("utf8").trimEnd())
      expect([parsed.sides, parsed.count]).toEqual([20, 3])
    }))
})

describe("ScriptsConfig", () => {
  const parsed = (entries: ReadonlyArray<readonly [string, string]>) =>
    Effect.provideService(Scripts.ScriptsConfig, ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(entries)), { preserveEmptyStrings: true }))
  const load = (entries: ReadonlyArray<readonly [string, string]>) => Effect.result(parsed(entries))

  it.effect("defaults to ./claws, 30 s and 16384 bytes", () =>
    Effect.gen(function*() {
      const config = yield* parsed([])
      expect(config.directory).toBe("./claws")
      expect(Duration.toSeconds(config.timeout)).toBe(30)
      expect(config.outputMax).toBe(16_384)
      expect(config.withheldSecrets).toEqual([])
    }))

  it.effect("reads every key, secrets redacted", () =>
    Effect.gen(function*() {
      const config = yield* parsed([
        ["CLAWS_DIR", "/opt/claws"],
        ["PLANCKCLAW_CLAW_TIMEOUT", "5"],
        ["PLANCKCLAW_CLAW_OUTPUT_MAX", "100"],
        ["ANTHROPIC_API_KEY", "test-key-not-secret"]
      ])
      expect(config.directory).toBe("/opt/claws")
      expect(Duration.toSeconds(config.timeout)).toBe(5)
      expect(config.outputMax).toBe(100)
      expect(config.withheldSecrets.map(Redacted.value)).toEqual(["test-key-not-secret"])
      expect(String(config.withheldSecrets[0])).not.toContain("test-key")
    }))

  it.effect("fails with a ConfigError naming the key for a bad value", () =>
    Effect.gen(function*() {
      for (
        const [key, value] of [
          ["PLANCKCLAW_CLAW_TIMEOUT", "0"],
          ["PLANCKCLAW_CLAW_TIMEOUT", "soon"],
          ["PLANCKCLAW_CLAW_OUTPUT_MAX", "-1"],
          ["PLANCKCLAW_CLAW_OUTPUT_MAX", "1.5"]
        ] as const
      ) {
        const result = yield* load([[key, value]])
        expect(Result.isFailure(result)).toBe(true)
        if (Result.isFailure(result)) {
          expect(result.failure).toBeInstanceOf(Config.ConfigError)
          // Refused as a bad value (not as missing), naming the key.
          expect(ConfigErrors.describe(result.failure)).toMatch(new RegExp(`^configuration error: ${key}: expected `))
          expect(String(result.failure)).toContain(key)
        }
      }
    }))
})
