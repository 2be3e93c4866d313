/**
 * `it.effect` and `it.live` for tests that start processes: each test gets a
 * spawn helper and a watchdog of its own (SpawnHelper.layer, as a command
 * gets at its entry), started at their first use and ended with the test.
 */
import { it as vitest } from "@effect/vitest"
import type * as V from "vitest"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as SpawnHelper from "../../src/runtime/process/SpawnHelper.js"
import type * as Watchdog from "../../src/runtime/process/Watchdog.js"

export type ProcessServices = SpawnHelper.SpawnHelper | Watchdog.Watchdog

type Body<A, E> = (context: V.TestContext) => Effect.Effect<A, E, Scope.Scope | ProcessServices>

const withProcesses = <A, E>(self: Body<A, E>) => (context: V.TestContext) => Effect.provide(self(context), SpawnHelper.layer)

/** Vitest's `it` for a plain test; `effect` and `live` as @effect/vitest's, with the process services. */
export const it = Object.assign((name: string, test: () => void) => vitest(name, test), {
  effect: <A, E>(name: string, self: Body<A, E>, timeout?: number | V.TestOptions): void =>
    vitest.effect(name, withProcesses(self), timeout),
  live: <A, E>(name: string, self: Body<A, E>, timeout?: number | V.TestOptions): void =>
    vitest.live(name, withProcesses(self), timeout)
})

/** SpawnHelper.run through the spawn helper in context. */
export const runInHelper = (request: Parameters<SpawnHelper.SpawnHelperService["run"]>[0]) =>
  Effect.flatMap(SpawnHelper.SpawnHelper, (helper) => helper.run(request))

/** The pid of the spawn helper in context, if it runs. */
export const helperPid: Effect.Effect<number | undefined, never, SpawnHelper.SpawnHelper> = Effect.map(
  SpawnHelper.SpawnHelper,
  (helper) => helper.helperPid()
)
