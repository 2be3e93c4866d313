/**
 * The fault campaign: a fault sandbox (a fake API key, one try and a short
 * timeout at the brain), a whole piped session against a Messages API
 * stand-in, an agent on the FIFOs with a client, and what the assertions
 * count (history lines, parse failures, a seeded PRNG for replayable
 * campaigns).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { expect } from "@effect/vitest"
import { Effect, Result, type Scope } from "effect"
import { isFailureReply } from "../../src/agent/Turn.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { line } from "../support/Harness.js"
import { fifosLeft } from "../support/Pipes.js"
import * as Sandbox from "../support/Sandbox.js"
import type { WaitTimedOut } from "./Bounds.js"
import { connectTo, type InteractClient } from "./FifoClient.js"
import { type Planckclaw, planckclaw, planckclawToEnd, strays } from "./Processes.js"

type Sandbox = Sandbox.Sandbox
type RecordedRequest = AnthropicServer.RecordedRequest
type Handler = AnthropicServer.Handler

export const SHIPPED_CLAWS = path.join(Cli.REPO, "claws")
export const FAKE_KEY = "test-key-not-secret-4f1c"
export const FAKE_TOKEN = "test-token-not-secret-9b2e"

/**
 * A sandbox for a fault test: Sandbox's, with a fake API key and a 5 s
 * brain timeout, then `settings`. Prompt caching is off: these tests check
 * what memory puts in a request in the plain shape (system a string, the last
 * HISTORY_KEEP lines); test/agent/PromptCache.test.ts checks the cached shape.
 */
export const sandbox = (settings: Record<string, string> = {}): Effect.Effect<Sandbox, never, Scope.Scope> =>
  Sandbox.sandbox(
    { ANTHROPIC_API_KEY: FAKE_KEY, PLANCKCLAW_BRAIN_TIMEOUT: "5", PLANCKCLAW_PROMPT_CACHE: "0", ...settings },
    "planckclaw-fault-"
  )

/** Parses every line of a JSONL text; the lines that do not parse. */
export const unparsableLines = (text: string): Array<string> =>
  text.split("\n").filter((raw) => raw !== "" && Result.isFailure(Result.try(() => JSON.parse(raw) as unknown)))

/** A small seeded PRNG (mulberry32), so a failing campaign can be replayed from its seed. */
export const prng = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// ---------------------------------------------------------------------------
// One piped session

/** A fault sandbox set up by `prepare`, and a Messages API stand-in answering with `handler`. */
const prepared = (handler: Handler, prepare: (box: Sandbox) => void) =>
  Effect.gen(function*() {
    const box = yield* sandbox()
    prepare(box)
    // Failing to listen on loopback is a broken machine, not a result.
    const server = yield* Effect.orDie(AnthropicServer.make(handler))
    return { box, server }
  })

export interface Session {
  readonly box: Sandbox
  readonly result: { readonly code: number | null; readonly stdout: string; readonly stderr: string }
  /** Stdout lines: the replies, in order. */
  readonly replies: Array<string>
  readonly requests: ReadonlyArray<RecordedRequest>
}

/**
 * Runs `planckclaw run` (terminal bridge) with `inputs` piped in, one per
 * line, against `handler`, after `prepare` set up the sandbox; then checks
 * that it ended cleanly: status 0 (3 when a reply said the brain could not
 * answer), no process left, no runtime directory.
 */
export const session = (
  handler: Handler,
  settings: Record<string, string>,
  inputs: ReadonlyArray<string>,
  prepare: (box: Sandbox) => void = () => undefined
): Effect.Effect<Session, WaitTimedOut, Scope.Scope> =>
  Effect.gen(function*() {
    const { box, server } = yield* prepared(handler, prepare)
    const result = yield* planckclawToEnd(
      box,
      ["run"],
      box.envWith({ ANTHROPIC_BASE_URL: server.url, ...settings }),
      inputs.map((input) => `${input}\n`).join("")
    )
    const replies = result.stdout.split("\n").slice(0, -1)
    // A piped run exits 3 when a reply said the brain could not answer (RunReplies), else 0.
    expect(result.code, result.stderr).toBe(replies.some(isFailureReply) ? 3 : 0)
    expect(yield* strays(box)).toEqual([])
    expect(fs.existsSync(box.runDir)).toBe(false)
    return { box, result, replies, requests: yield* server.requests }
  })

/** History lines for these exchanges, in order. */
export const answered = (...pairs: ReadonlyArray<readonly [string, string]>) =>
  pairs.map(([user, assistant]) => line("user", user) + line("assistant", assistant)).join("")

/** How many times `needle` occurs in `haystack`. */
export const occurrences = (haystack: string, needle: string) => haystack.split(needle).length - 1

export interface FifoAgent {
  readonly box: Sandbox
  readonly server: AnthropicServer.AnthropicServer
  readonly proc: Planckclaw
  readonly client: InteractClient
  /** SIGTERM, then checks a clean end: status 0, no FIFO, no runtime directory, no process left. */
  readonly stop: Effect.Effect<void, WaitTimedOut>
}

/** `planckclaw run --bridge none` against `handler`, with a client on its interact FIFOs. */
export const fifoAgent = (
  handler: Handler,
  settings: Record<string, string> = {},
  prepare: (box: Sandbox) => void = () => undefined
): Effect.Effect<FifoAgent, WaitTimedOut, Scope.Scope> =>
  Effect.gen(function*() {
    const { box, server } = yield* prepared(handler, prepare)
    const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url, ...settings }), {
      stdin: "ignore"
    })
    const client = yield* connectTo(proc, box.runDir)
    const stop = Effect.gen(function*() {
      yield* proc.signal("SIGTERM")
      const end = yield* proc.ended
      expect(end, proc.stderr()).toEqual({ code: 0, signal: null })
      expect(fifosLeft(box.runDir)).toEqual([])
      expect(fs.existsSync(box.runDir)).toBe(false)
      expect(yield* strays(box)).toEqual([])
    })
    return { box, server, proc, client, stop }
  })

