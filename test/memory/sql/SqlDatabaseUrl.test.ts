/**
 * PLANCKCLAW_DATABASE_URL as the messages name it: the server the driver
 * actually connects to (its `host`, `port` and `dbname` parameters win over
 * the URL's authority and path, as in libpq), and never a part of the
 * password. A password holding an unescaped `/` or `#` ends the URL's
 * authority early: the rest of it would be read as the port and the
 * database name and shown as such, so such a URL is refused unshown.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted, Result } from "effect"
import * as ConfigErrors from "../../../src/config/ConfigErrors.js"
import { DatabaseUrlConfig, describeUrl } from "../../../src/memory/sql/SqlDatabase.js"

const read = (url: string) =>
  Effect.result(Effect.provideService(
    DatabaseUrlConfig,
    ConfigProvider.ConfigProvider,
    ConfigProvider.fromEnvRecord({ PLANCKCLAW_DATABASE_URL: url })
  ))

describe("PLANCKCLAW_DATABASE_URL in messages", () => {
  it("names the host, port and database the driver connects to, from the URL's parameters too", () => {
    expect(describeUrl(Redacted.make("postgres://planck:hunter2@db.example:6543/agents"))).toBe("PostgreSQL at db.example:6543/agents")
    expect(describeUrl(Redacted.make("postgres://planck:hunter2@localhost/agents?host=10.0.0.9&port=6544&dbname=ops")))
      .toBe("PostgreSQL at 10.0.0.9:6544/ops")
    expect(describeUrl(Redacted.make("postgresql:///agents?host=/var/run/postgresql&password=hunter2")))
      .toBe("PostgreSQL at /var/run/postgresql/agents")
    expect(describeUrl(Redacted.make("postgres://planck:hunter2@%2Fvar%2Frun%2Fpostgresql/agents")))
      .toBe("PostgreSQL at /var/run/postgresql/agents")
  })

  it.effect("refuses, unshown, a URL whose password holds an unescaped / or #", () =>
    Effect.gen(function*() {
      for (const url of ["postgres://planck:1234/hunter2@db.example/agents", "postgres://planck:1234#hunter2@db.example/agents"]) {
        const result = yield* read(url)
        expect(Result.isFailure(result)).toBe(true)
        const message = Result.isFailure(result) ? ConfigErrors.describe(result.failure) : ""
        expect(message).toContain("percent-encode")
        expect(message).not.toContain("hunter2")
        expect(message).not.toContain("1234")
      }
      const encoded = yield* read("postgres://planck:1234%2Fhunter2@db.example/agents")
      expect(Result.isSuccess(encoded) ? describeUrl(encoded.success) : "refused").toBe("PostgreSQL at db.example/agents")
      const atInName = yield* read("postgres://planck:hunter2@db.example/team%40ops")
      expect(Result.isSuccess(atInName) ? describeUrl(atInName.success) : "refused").toBe("PostgreSQL at db.example/team@ops")
    }))
})
