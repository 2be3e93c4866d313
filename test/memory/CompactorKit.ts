/**
 * A compactor made directly (Compactor.make) on a memory directory, with a
 * fold store the test may wrap and a scripted brain that answers summaries,
 * at HISTORY_MAX 4 and HISTORY_KEEP 2.
 */
import { ConfigProvider, Context, Effect } from "effect"
import { Brain } from "../../src/ports/Brain.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as Compactor from "../../src/agent/Compactor.js"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { line } from "../support/Harness.js"

/** `lines` lines of history, user and assistant in turn. */
export const history = (lines: number) =>
  Array.from({ length: lines }, (_, n) => line(n % 2 === 0 ? "user" : "assistant", `m${n}`)).join("")

/** The compactor over `memory` and `folds`, its brain answering `summaries` in order (a text, a whole answer, or a step that sees the request). */
export const compactorOver = (
  memory: Memory.MemoryService,
  folds: FoldStore.FoldStoreService,
  summaries: ReadonlyArray<string | ScriptedBrain.ScriptStep>
) =>
  Effect.flatMap(ScriptedBrain.make(summaries.map((summary) => typeof summary === "string" ? ScriptedBrain.text(summary) : summary)), (brain) =>
    Compactor.make.pipe(
      Effect.provide(
        Context.make(Memory.Memory, memory).pipe(
          Context.add(FoldStore.FoldStore, folds),
          Context.add(Brain, brain.service)
        )
      ),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["HISTORY_MAX", "4"], ["HISTORY_KEEP", "2"], ["PLANCKCLAW_MODEL", "test-model"]])), { preserveEmptyStrings: true }))
    ))
