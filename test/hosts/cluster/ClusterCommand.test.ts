/**
 * `planckclaw serve --cluster` as built, refusing what it cannot run on:
 * missing settings name their keys (exit 2), a database URL that is not a
 * postgres:// one is refused unshown (exit 2), and a database it cannot reach
 * is named without its password (exit 1).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Cli from "../../support/Cli.js"
import { freePort } from "./Runners.js"

describe("planckclaw serve --cluster (built command)", () => {
  it.live("names the missing settings, and never shows the database password", () =>
    Effect.gen(function*() {
      const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-cluster-cli-"))
      const env = Cli.baseEnv({ ANTHROPIC_API_KEY: "test-api-key", PLANCKCLAW_AGENTS_DIR: path.join(cwd, "agents") })
      const missing = yield* Cli.run(["serve", "--cluster", "--http", "127.0.0.1:0"], { cwd, env })
      expect(missing.code).toBe(2)
      expect(missing.stderr).toContain("PLANCKCLAW_DATABASE_URL is not set")
      expect(missing.stderr).toContain("PLANCKCLAW_RUNNER_ADDRESS is not set")

      const closed = yield* Effect.promise(freePort)
      const unreachable = yield* Cli.run(["serve", "--cluster", "--http", "127.0.0.1:0"], {
        cwd,
        env: {
          ...env,
          PLANCKCLAW_DATABASE_URL: `postgres://planck:hunter2-secret@127.0.0.1:${closed}/agents`,
          PLANCKCLAW_RUNNER_ADDRESS: "127.0.0.1:1"
        }
      })
      expect(unreachable.code).toBe(1)
      expect(unreachable.stderr).toContain(`cannot reach the PostgreSQL at 127.0.0.1:${closed}/agents`)
      expect(unreachable.stderr + unreachable.stdout).not.toContain("hunter2-secret")

      const badAddress = yield* Cli.run(["serve", "--cluster"], {
        cwd,
        env: { ...env, PLANCKCLAW_DATABASE_URL: "postgres://planck:hunter2-secret@127.0.0.1:1/agents", PLANCKCLAW_RUNNER_ADDRESS: "34431" }
      })
      expect(badAddress.code).toBe(2)
      expect(badAddress.stderr).toContain("PLANCKCLAW_RUNNER_ADDRESS expects HOST:PORT")
      expect(badAddress.stderr).not.toContain("hunter2-secret")

      // No scheme: `new URL` reads `planck:` as one and the password as the path.
      const noScheme = yield* Cli.run(["serve", "--cluster"], {
        cwd,
        env: { ...env, PLANCKCLAW_DATABASE_URL: "planck:hunter2-secret@127.0.0.1/agents", PLANCKCLAW_RUNNER_ADDRESS: "127.0.0.1:1" }
      })
      expect(noScheme.code).toBe(2)
      expect(noScheme.stderr).toContain("PLANCKCLAW_DATABASE_URL")
      expect(noScheme.stderr).toContain("expected a postgres:// URL")
      expect(noScheme.stderr + noScheme.stdout).not.toContain("hunter2-secret")
      fs.rmSync(cwd, { recursive: true, force: true })
    }), 60_000)
})
