/**
 * One MCP server from mcp.json, supervised, through effect/ai's McpClient
 * (McpTransport: its stdio transport starts the process through effect's
 * ChildProcessSpawner; its HTTP transport posts through HttpClient).
 *
 * Started on first use (a list or a call), not when the agent starts. A
 * server whose process exits, or whose transport fails under a call, is
 * down: its tools answer an error result at once (the turn goes on), and it
 * is started again after a backoff (restartSchedule: 1 s doubling to a
 * minute). One that leaves a call unanswered for the timeout is hung: it is
 * stopped (its process killed, as a claw's session is; over HTTP, its
 * connection dropped) and started again at once, as the wait spaced the
 * restarts already. A start that fails is retried the same way, so a server that
 * cannot start costs one attempt a minute, not one per message.
 *
 * The protocol revision is 2025-11-25, the one revision before 2026-07-28
 * (which few servers speak yet) that effect/ai's McpClient speaks: a server
 * that insists on an older one is refused, with why (docs/mcp.md).
 */
import type * as McpClient from "effect/ai/McpClient"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as Option from "effect/Option"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import type * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import type { ToolResult } from "../../ports/Claws.js"
import { printable } from "../../runtime/Printable.js"
import { nextTurn } from "../../runtime/process/NextTurn.js"
import type { ServerEntry } from "./McpConfig.js"
import { hidingSecrets } from "./McpNames.js"
import { toToolResult } from "./McpResult.js"
import { connect, describeClientError, isTransportFailure, oversizedCall, type ProcessNotes, type Reach } from "./McpTransport.js"

/** How long a server must have been up for its death to restart it at once, on a fresh backoff. */
export const healthyLife = Duration.minutes(1)

export const restartSchedule: Schedule.Schedule<Duration.Duration, unknown> = Schedule.min([
  Schedule.exponential("1 second"),
  Schedule.spaced("1 minute")
])


export interface ConnectionSettings {
  /** How long a start or a call may take (the claws' timeout). */
  readonly timeout: Duration.Duration
  /** Bytes of a result kept (the claws' output cap). */
  readonly outputMax: number
  /** Values no server may be given, whatever variable its entry puts them in. */
  readonly withheldSecrets: ReadonlyArray<Redacted.Redacted<string>>
  readonly restartSchedule?: Schedule.Schedule<unknown, unknown>
  /** Log a server found down (the agent); doctor and `tools` say it themselves. */
  readonly logDown?: boolean
}

export type ConnectionState =
  | { readonly _tag: "Idle" }
  | { readonly _tag: "Starting" }
  | { readonly _tag: "Up"; readonly tools: ReadonlyArray<McpSchema.Tool> }
  | { readonly _tag: "Down"; readonly reason: string }

export interface Connection {
  readonly entry: ServerEntry
  /**
   * Its tools: started on first use, waiting up to the timeout for a start
   * under way. Down: the tools it had when last up (a call answers an
   * error), and why it is down.
   */
  readonly tools: Effect.Effect<{ readonly tools: ReadonlyArray<McpSchema.Tool>; readonly down: string | undefined }>
  readonly call: (tool: string, input: Record<string, unknown>) => Effect.Effect<ToolResult>
  readonly state: () => ConnectionState
  /** The process of a stdio server while it runs. */
  readonly pid: () => number | undefined
}

/** How long a server whose start failed is given to exit, so its exit and stderr say why. */
const exitGrace = Duration.millis(500)

interface Up {
  readonly client: McpClient.McpClient
  readonly tools: ReadonlyArray<McpSchema.Tool>
  /** Completed with why, when the server is found dead. */
  readonly died: Deferred.Deferred<string>
  /** Set when it died of a call left unanswered: stopped, then started again at once. */
  unanswered: boolean
}

export const make = (
  entry: ServerEntry,
  settings: ConnectionSettings
): Effect.Effect<Connection, never, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    // Only these two: the client and its process belong to the session's scope, not to this one.
    const httpClient = yield* HttpClient.HttpClient
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    let state: ConnectionState = { _tag: "Idle" }
    let up: Up | undefined
    let lastTools: ReadonlyArray<McpSchema.Tool> = []
    const notes: ProcessNotes = { pid: undefined, stderrTail: "", kill: undefined }
    const reach: Reach = {
      entry,
      timeout: settings.timeout,
      withheldSecrets: settings.withheldSecrets,
      spawner,
      httpClient,
      notes,
      logStray: settings.logDown !== false
    }
    /** Set once the scope closes: the server's exit is then ours, not a failure. */
    let stopping = false
    /** Completed when the start under way ends, up or down. */
    let settled = yield* Deferred.make<void>()

    /** Why the server was last down: set once a start has failed or the server died. */
    let lastDown: string | undefined
    let firstStartWaited = false
    const settle = (next: ConnectionState) =>
      Effect.suspend(() => {
        state = next
        if (next._tag === "Down") lastDown = next.reason
        return Deferred.succeed(settled, undefined)
      })

    const hidden = hidingSecrets(entry)
    const withStderr = (reason: string): string => {
      // Hidden before it is cut, so that no piece of a secret is left at the cut.
      const tail = hidden(notes.stderrTail).trim()
      return printable(hidden(tail === "" ? reason : `${reason}; its stderr ends: ${tail.slice(-300)}`))
    }

    /**
     * Why a start or a call failed, in the process's own words when it
     * exited: its exit and the end of its stderr (read a moment after, as a
     * write to a closed stdin or a closed stdout is often seen before the
     * exit), not the broken pipe.
     */
    const exitOr = (reason: string, died: Deferred.Deferred<string>) =>
      Effect.gen(function*() {
        if (entry._tag !== "Stdio" || notes.pid === undefined) return reason
        const exit = yield* Deferred.await(died).pipe(Effect.timeoutOption(exitGrace))
        yield* nextTurn
        return Option.getOrElse(exit, () => reason)
      })
    /** A stdio server's process group killed, and waited for; nothing over HTTP (closing the client drops its connection). */
    const killProcess = Effect.suspend(() => notes.kill ?? Effect.void)
    const startFailure = (reason: string, died: Deferred.Deferred<string>) => Effect.flip(exitOr(reason, died))

    /**
     * One life of the server: started, up until found dead. Fails with why
     * when it could not start or died young; succeeds with why when it had
     * lived healthyLife, so the backoff starts over (a server that crashes
     * once a day is not left a minute down each time).
     */
    const session = Effect.gen(function*() {
      notes.stderrTail = ""
      notes.pid = undefined
      notes.kill = undefined
      const died = yield* Deferred.make<string>()
      const client = yield* connect(reach, died).pipe(Effect.catch((reason) => startFailure(reason, died)))
      const tools = yield* client.listTools().pipe(
        Effect.mapError((error) => `cannot list its tools: ${hidden(describeClientError(error, entry))}`)
      )
      const life: Up = { client, tools, died, unanswered: false as boolean }
      up = life
      lastTools = tools
      yield* settle({ _tag: "Up", tools })
      const upAt = yield* Clock.currentTimeMillis
      const reason = yield* Deferred.await(died)
      // Hung: killed now, not left 10 s to McpClient's close (stdin closed, then SIGTERM), which a hung server ignores.
      if (life.unanswered) yield* killProcess
      const lived = (yield* Clock.currentTimeMillis) - upAt
      return lived >= Duration.toMillis(healthyLife) || life.unanswered ? reason : yield* Effect.fail(reason)
    }).pipe(Effect.scoped)

    /** Down for `reason`: said (unless the scope is closing), its calls answered at once until it is started again. */
    const down = (when: "at once" | "after a backoff") => (reason: string) =>
      Effect.suspend(() => {
        if (stopping) return Effect.interrupt
        up = undefined
        notes.pid = undefined
        notes.kill = undefined
        const why = withStderr(reason)
        return Effect.andThen(
          settings.logDown === false
            ? Effect.void
            : Effect.logWarning(`MCP server ${entry.name} is down (${why}); starting it again ${when}`),
          Effect.andThen(settle({ _tag: "Down", reason: why }), Effect.sync(() => {
            settled = Deferred.makeUnsafe<void>()
          }))
        )
      })

    const attempt = Effect.suspend(() => {
      state = { _tag: "Starting" }
      return session
    }).pipe(Effect.tapError(down("after a backoff")))

    // Retried on the schedule while it fails; after a long life or a hang, started again at once, on a fresh schedule.
    const supervise = Effect.forever(
      attempt.pipe(Effect.retry(settings.restartSchedule ?? restartSchedule), Effect.flatMap(down("at once")))
    )

    const ensureStarted = Effect.suspend(() => {
      if (state._tag !== "Idle") return Effect.void
      state = { _tag: "Starting" }
      // Added after the fork, so it runs before the fork is interrupted: an exit from then on is the stop's.
      return Effect.andThen(
        Effect.forkIn(supervise, scope),
        Scope.addFinalizer(scope, Effect.sync(() => {
          stopping = true
        }))
      )
    })

    /** Up, or why not, once the first start (if under way) has ended, waited for at most `timeout`. */
    const current: Effect.Effect<Up | string> = Effect.gen(function*() {
      yield* ensureStarted
      // Only the first start is waited for: a server that hangs at every start would hold every message for the timeout.
      if (state._tag === "Starting" && firstStartWaited) {
        return lastDown === undefined ? "still starting" : `being started again after: ${lastDown}`
      }
      if (state._tag === "Starting") {
        const waited = yield* Deferred.await(settled).pipe(Effect.timeoutOption(settings.timeout))
        firstStartWaited = true
        if (Option.isNone(waited)) return `still starting after ${Duration.format(settings.timeout)}`
      }
      if (up !== undefined) return up
      return state._tag === "Down" ? state.reason : "not running"
    })

    const tools = Effect.map(current, (now) =>
      typeof now === "string" ? { tools: lastTools, down: now } : { tools: now.tools, down: undefined })

    const downResult = (name: string, reason: string): ToolResult => ({
      content: `Tool ${name}: MCP server ${entry.name} is not running (${reason}); it is being restarted, try again shortly`,
      isError: true
    })

    const call = (name: string, input: Record<string, unknown>): Effect.Effect<ToolResult> =>
      Effect.gen(function*() {
        const now = yield* current
        if (typeof now === "string") return downResult(name, now)
        const tool = now.tools.find((candidate) => candidate.name === name)
        if (tool === undefined) return { content: `Unknown tool: ${name} (MCP server ${entry.name} offers no such tool)`, isError: true }
        const tooLarge = oversizedCall(name, input)
        if (tooLarge !== undefined) return { content: `Tool ${name}: ${tooLarge}`, isError: true }
        // Timed from when it is sent: the wait for a first start (current) has its own bound.
        const answered = yield* Effect.result(now.client.callTool({ tool, arguments: input })).pipe(
          Effect.timeoutOption(settings.timeout)
        )
        if (Option.isNone(answered)) return yield* unanswered(now, name)
        const outcome = answered.value
        if (outcome._tag === "Success") return toToolResult(outcome.success, settings.outputMax)
        const error = outcome.failure
        // A stdio transport that closed under the call has said so in `died` already (McpTransport).
        if (!isTransportFailure(error) && !(yield* Deferred.isDone(now.died))) {
          return { content: printable(hidden(`Tool ${name} failed: ${describeClientError(error, entry)}`)), isError: true }
        }
        // Gone under the call, as at a start: its exit says why better than the closed pipe.
        yield* Deferred.succeed(now.died, hidden(yield* exitOr(error.message, now.died)))
        return downResult(name, withStderr(yield* Deferred.await(now.died)))
      })

    /**
     * A call with no answer within the timeout: the server is taken for hung
     * (a tool's own error is an answer), so it is stopped and started again,
     * and the calls still waiting on it are answered that it was.
     */
    const unanswered = (now: Up, name: string) =>
      Effect.gen(function*() {
        const waited = Duration.format(settings.timeout)
        // Marked before `died` is completed: the session reads the mark as soon as it is.
        if (!(yield* Deferred.isDone(now.died))) {
          now.unanswered = true
          yield* Deferred.succeed(now.died, `it left a call of ${name} unanswered for ${waited}, so it was stopped`)
        }
        return {
          content: `Tool ${name} timed out after ${waited}; MCP server ${entry.name} did not answer, so it is being restarted`,
          isError: true
        } satisfies ToolResult
      })

    return { entry, tools, call, state: () => state, pid: () => notes.pid }
  })
