/**
 * Doctor sends the brain's key too: an echoed key straddling the excerpt's
 * cut never shows, and a redirect is not followed to the host it names.
 */
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import * as BrainCheck from "../../../../src/cli/commands/doctor/BrainCheck.js"
import { render } from "../../../../src/cli/commands/doctor/DoctorCheck.js"
import * as AnthropicServer from "../../../support/AnthropicServer.js"

const key = "sk-live-0123456789abcdefghijKLMN"

const brain = (settings: Record<string, string>) =>
  BrainCheck.check.pipe(
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(settings))), { preserveEmptyStrings: true })),
    Effect.provide(FetchHttpClient.layer)
  )

describe("doctor and the key", () => {
  it.live("an error that echoes the key across the excerpt's cut never shows a piece of it", () =>
    Effect.gen(function*() {
      const pads = Array.from({ length: 80 }, (_, index) => 120 + index * 3)
      const server = yield* AnthropicServer.make((_, index) =>
        AnthropicServer.apiError(529, "overloaded_error", `${"x".repeat(pads[index] ?? 0)} your key ${key} is wrong`)
      )
      const shown: Array<string> = []
      for (const _ of pads) {
        const findings = yield* brain({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: server.url })
        shown.push(...findings.map((finding) => render(finding, false)))
      }
      expect(shown.some((line) => line.includes("<redac"))).toBe(true)
      expect(shown.filter((line) => line.includes(key.slice(0, 8)) || line.includes(key.slice(8, 16)))).toEqual([])
    }))

  it.live("a redirect is not followed: the host it names gets nothing, and the advice says to fix the base URL", () =>
    Effect.gen(function*() {
      const elsewhere = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.respond(200, { id: "m" })))
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.respond(302, "", { location: `${elsewhere.url}/v1/models/m` })
      ))
      const findings = yield* brain({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: server.url })
      expect(findings[0]).toMatchObject({ subject: "brain", status: "fail" })
      expect(render(findings[0]!, false)).toContain("a redirect is never followed (it would carry the key elsewhere)")
      expect(yield* elsewhere.requests).toEqual([])
    }))
})
