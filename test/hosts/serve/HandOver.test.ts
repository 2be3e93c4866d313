import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect, Option } from "effect"
import * as Agent from "../../../src/agent/Agent.js"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import { AgentConfig } from "../../../src/config/AgentConfig.js"
import * as FallbackSoul from "../../../src/memory/FallbackSoul.js"
import * as Inbox from "../../../src/memory/Inbox.js"
import * as AgentInstance from "../../../src/hosts/serve/AgentInstance.js"
import type { Reply } from "../../../src/hosts/serve/AgentHost.js"
import * as AgentSettings from "../../../src/hosts/serve/AgentSettings.js"
import * as OpenFiles from "../../../src/hosts/serve/OpenFiles.js"
import { lastUserText, tempDir } from "./Kit.js"

describe("an agent instance started after one a defect stopped", () => {
  it.live("answers the messages handed over to the callers that came with them, and one the journal lost with an apology", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const directory = path.join(root, "agents", "fragile")
      fs.mkdirSync(directory, { recursive: true, mode: 0o700 })
      // What the stopped instance had journaled and not answered.
      const [one, two] = yield* Effect.scoped(Effect.flatMap(Inbox.make(directory), (inbox) =>
        Effect.all([inbox.accept({ channel: "http", text: "one" }), inbox.accept({ channel: "http", text: "two", idempotencyKey: "k-2" })])))
      const lost: Inbox.Pending = { id: 99, key: "not-in-the-journal", channel: "http", text: "lost", reply: Option.none() }
      const callers = { one: yield* Deferred.make<Reply>(), two: yield* Deferred.make<Reply>(), lost: yield* Deferred.make<Reply>() }
      const provider = ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: path.join(root, "memory"), PLANCKCLAW_PROMPT_CACHE: "0" })
      const config = yield* Effect.provideService(Effect.gen(function*() { return yield* AgentConfig }), ConfigProvider.ConfigProvider, provider)
      const instance = yield* AgentInstance.make({
        id: "fragile",
        directory,
        shared: {
          brain: { complete: (request) => Effect.succeed(ScriptedBrain.text(`echo ${lastUserText(request)}`)) },
          claws: InMemoryClaws.make([]),
          provider,
          settings: AgentSettings.withParsed(config, provider),
          defaultSoul: FallbackSoul.reader(path.join(root, "memory", "soul.md")),
          idempotencyKeys: 100,
          ownerFile: () => undefined,
          openFiles: OpenFiles.make(8)
        },
        handedOver: [{ pending: one, reply: callers.one }, { pending: two, reply: callers.two }, { pending: lost, reply: callers.lost }],
        restart: Effect.void
      })
      expect(instance.recovered).toEqual([callers.one, callers.two])
      expect(yield* Deferred.await(callers.one)).toEqual({ reply: "echo one", stored: true })
      expect(yield* Deferred.await(callers.two)).toEqual({ reply: "echo two", stored: true })
      expect(yield* Deferred.await(callers.lost)).toEqual({ reply: Agent.APOLOGY, stored: false, notAnswered: "failed" })
      // The key of the one handed over is recorded: sent again, it gets that reply without a turn.
      const again = yield* instance.submit({ text: "two", channel: "http", idempotencyKey: "k-2" })
      expect(Option.isSome(again) && (yield* Deferred.await(again.value))).toEqual({ reply: "echo two", stored: true })
    }).pipe(Effect.scoped))
})
