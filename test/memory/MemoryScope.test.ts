/**
 * The held descriptors (history, ledger, inbox journal) belong to the
 * layers' scope: an agent the service releases (idle, or restarted after a
 * defect) frees its file descriptors, so a host that starts and releases
 * agents all day does not run out of them.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import * as Inbox from "../../src/memory/Inbox.js"
import * as Memory from "../../src/memory/Memory.js"
import { tempDir } from "../support/Sandbox.js"

const openDescriptors = () => fs.readdirSync("/proc/self/fd").length

/** Builds an agent's memory layers, uses every held descriptor once, and releases them. */
const oneAgent = (directory: string, round: number) =>
  Effect.scoped(Effect.gen(function*() {
    const built = yield* Layer.build(Layer.merge(Memory.layer, Inbox.layer)).pipe(
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["PLANCKCLAW_DIR", directory]])), { preserveEmptyStrings: true }))
    )
    const memory = Context.get(built, Memory.Memory)
    const inbox = Context.get(built, Inbox.Inbox)
    const pending = yield* inbox.accept({ channel: "c", text: `message ${round}` })
    // Keyed: the ledger is written too (whole the first time, appended to after).
    yield* memory.append([{ role: "user", content: `message ${round}` }, { role: "assistant", content: "ok" }], {
      exchange: pending.key ?? `round-${round}`
    })
    yield* inbox.answered(pending, "ok", true)
    yield* inbox.delivered(pending)
  }))

describe("memory layers are scoped", () => {
  it.effect("building and releasing an agent's memory 50 times leaves no descriptor open", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      // Warmed up first: the ledger then exists, and so is held, in every round after.
      yield* oneAgent(directory, 0)
      yield* oneAgent(directory, 1)
      const baseline = openDescriptors()
      for (let round = 2; round < 52; round++) yield* oneAgent(directory, round)
      expect(openDescriptors()).toBe(baseline)
      expect(fs.readFileSync(`${directory}/history.jsonl`, "utf8").split("\n").length).toBe(52 * 2 + 1)
    }))
})
