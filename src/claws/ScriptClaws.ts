/**
 * Claws from shell scripts: every `CLAWS_DIR/*.sh` declares its tools on
 * `#TOOLS:` lines (found by ClawDiscovery before every message) and is run
 * as a child process to call one.
 *
 * A call runs `CLAW NAME INPUT_JSON` with stdin on /dev/null, in a fresh
 * private directory removed after the call (not the agent's working
 * directory, where config.env and its secrets live), with the agent's
 * environment minus its secrets (PWD naming that directory, no OLDPWD). The result never ends with
 * whitespace: trailing newlines are trimmed so a result cannot end in the
 * empty line that frames answers on the claw FIFO.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { Claws, type ClawsService, type ToolCatalog, type ToolProblem, type ToolResult, unknownTool } from "../ports/Claws.js"
import { numberOf, textOf } from "../config/ConfigRange.js"
import { ClawOutputMax, ClawsDir, ClawTimeout } from "../config/settings/Claws.js"
import { childEnvironment, SecretValuesConfig } from "../config/Secrets.js"
import { describeError, errnoCode } from "../runtime/Errors.js"
import { describeJsonType, isJsonObject } from "../runtime/Json.js"
import * as ChildProcess from "../runtime/process/ChildProcess.js"
import * as SpawnHelper from "../runtime/process/SpawnHelper.js"
import { nextTurn } from "../runtime/process/NextTurn.js"
import { printable } from "../runtime/Printable.js"
import * as Tracing from "../runtime/Tracing.js"
import { type Catalog, type Discovery, makeDiscovery, type WatchDirectory } from "./ClawDiscovery.js"
import { interpreterProblem, ranWithShHint } from "./ClawInterpreter.js"
import { cutShort, formatOutcome } from "./ClawOutcome.js"

/** Seconds before a claw's whole session is killed; also read by the agent's patience on the claw pipes (Bridges). */
export const ClawTimeoutConfig = numberOf(ClawTimeout)

export const ScriptsConfig = Config.all({
  directory: textOf(ClawsDir, (dir) => dir.length > 0 ? { value: dir } : "must not be empty"),
  timeout: ClawTimeoutConfig.pipe(Config.map(Duration.seconds)),
  outputMax: numberOf(ClawOutputMax),
  /** Values no child may inherit, whatever variable they hide in. */
  withheldSecrets: SecretValuesConfig
})
export type ScriptsConfig = Config.Success<typeof ScriptsConfig>

/** Stderr kept for the excerpt in an error result. */
const stderrExcerptMax = 2048
/** Bytes past what is kept of stdout or stderr before the claw is stopped as a flood (ChildProcess.RunRequest). */
const floodAllowance = 1024 * 1024

const isExecutable = (path: string): boolean => Result.isSuccess(Result.try(() => Fs.accessSync(path, Fs.constants.X_OK)))

const problemKey = (problem: ToolProblem): string => `${problem.source}\u0000${problem.reason}`

/**
 * The wait before a watched scan, so that the inotify event of every change
 * whose system call returned before the wait began has reached the watcher
 * (the kernel queues it before the call returns; the loop reads it when it
 * polls).
 *
 * `turns` 2, for any caller: whatever phase it is called from, the loop has
 * polled its descriptors since. One turn is not enough in general: called
 * from an I/O callback, the first `setImmediate` runs before the loop polls
 * again. `turns` 1, for a request read from a pipe (`listOnRequest`): the
 * poll that delivered the request came after the changes made before its
 * message, and the first `setImmediate` runs once that poll's events are
 * all handled.
 *
 * Shared: a wait that begins before the pending one's first turn has run
 * joins it (the poll or the end of the poll it needs still comes after it);
 * later waits start the next. Many agents listing in the same turn of the
 * loop (`planckclaw serve`) pay for one wait.
 */
export const makeCatchUp = (turns: 1 | 2): Effect.Effect<void> => {
  let joinable: Set<(done: Effect.Effect<void>) => void> | undefined
  return Effect.callback<void>((resume) => {
    let waiters = joinable
    if (waiters === undefined) {
      const started = new Set<(done: Effect.Effect<void>) => void>()
      waiters = started
      joinable = started
      const release = () => {
        for (const waiter of started) waiter(Effect.void)
      }
      setImmediate(() => {
        if (joinable === started) joinable = undefined
        if (turns === 1) release()
        else setImmediate(release)
      })
    }
    // No canceler: an interrupted waiter's resume is called with the others,
    // at most two loop turns later, and ignored by its fiber. A canceler would
    // wrap every wait in onInterrupt (about ten more run-loop steps per list).
    waiters.add(resume)
  })
}

/** What a watched list waits for before its scan: any caller's, and a request's read from a pipe. */
export interface CatchUps {
  readonly list: Effect.Effect<void>
  readonly request: Effect.Effect<void>
}

const makeCatchUps = (): CatchUps => ({ list: makeCatchUp(2), request: makeCatchUp(1) })

/**
 * How often a watched discovery stats every claw anyway, in the background
 * (not on a message's path), for the changes inotify cannot report.
 */
export const safetyScanInterval = Duration.seconds(5)
/** Claws statted per step of that pass: a step blocks the event loop well under a millisecond. */
const safetyScanStep = 64

/** One pass over the claws, a step per event-loop turn, so that a message arriving meanwhile is not held up. */
const safetyScan = (discovery: Discovery) =>
  Effect.gen(function*() {
    let next = discovery.verify(0, safetyScanStep)
    while (next !== undefined) {
      yield* nextTurn
      next = discovery.verify(next, safetyScanStep)
    }
  })

/** Claws found by a full stat scan of the directory on every list (a one-off listing, as `planckclaw tools`). */
export const make = (config: ScriptsConfig): Effect.Effect<ClawsService, never, SpawnHelper.SpawnHelper> =>
  Effect.map(SpawnHelper.SpawnHelper, (helper) => build(config, makeDiscovery(config.directory), makeCatchUps(), helper))

/**
 * Claws found with change notification on the directory for the life of
 * the scope (the running agent): a list stats the directory and only the
 * claws that changed, with the full stat scan as the fallback and, every
 * `safetyScanInterval`, in the background.
 */
export const makeWatched = (
  config: ScriptsConfig,
  startWatch?: WatchDirectory,
  /** The waits before a scan, unless a test counts them. */
  catchUps: CatchUps = makeCatchUps()
): Effect.Effect<ClawsService, never, Scope.Scope | SpawnHelper.SpawnHelper> =>
  Effect.gen(function*() {
    const helper = yield* SpawnHelper.SpawnHelper
    const discovery = makeDiscovery(config.directory, startWatch)
    yield* Effect.acquireRelease(Effect.sync(discovery.watch), (stop) => Effect.sync(stop))
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(safetyScanInterval), safetyScan(discovery))))
    return build(config, discovery, catchUps, helper)
  })

const build = (config: ScriptsConfig, discovery: Discovery, catchUps: CatchUps, helper: SpawnHelper.SpawnHelperService): ClawsService => {
  let reported = new Set<string>()
  const watchFailuresLogged = new Set<string>()

  /** The catalogue as it is now, its problems and a failed watch logged once. */
  const scanAndReport: Effect.Effect<Catalog> = Effect.suspend(() => report(discovery.scan()))
  let lastReported: Catalog | undefined
  const report = (catalog: Catalog): Effect.Effect<Catalog> => {
    const failure = discovery.watchFailure()
    const newFailure = failure !== undefined && !watchFailuresLogged.has(failure)
    // The warm path: the same catalogue as last time (discovery keeps it while nothing changed).
    if (catalog === lastReported && !newFailure) return Effect.succeed(catalog)
    lastReported = catalog
    // Warn about a problem once while it lasts, not on every message.
    const newProblems = catalog.problems.filter((problem) => !reported.has(problemKey(problem)))
    reported = new Set(catalog.problems.map(problemKey))
    return newProblems.length === 0 && !newFailure ? Effect.succeed(catalog) : logNews(catalog, failure, newProblems)
  }
  const logNews = (catalog: Catalog, failure: string | undefined, newProblems: ReadonlyArray<ToolProblem>) =>
    Effect.gen(function*() {
      if (failure !== undefined && !watchFailuresLogged.has(failure)) {
        watchFailuresLogged.add(failure)
        yield* Effect.logWarning(
          `cannot watch the claws directory ${config.directory} (${failure}): every message stats every claw instead`
        )
      }
      for (const problem of newProblems) yield* Effect.logWarning(`claw problem at ${problem.source}: ${problem.reason}`)
      return catalog
    })

  const listAfter = (wait: Effect.Effect<void>): Effect.Effect<Catalog> => {
    const waited = Effect.andThen(wait, scanAndReport)
    return Effect.suspend(() => discovery.watching() ? waited : scanAndReport)
  }
  const list = listAfter(catchUps.list)
  // The same catalogue (discovery keeps it while nothing changed) gives the same object.
  let lastCatalog: Catalog | undefined
  let lastToolCatalog: ToolCatalog | undefined
  const toToolCatalog = (catalog: Catalog): ToolCatalog => {
    if (catalog !== lastCatalog || lastToolCatalog === undefined) {
      lastCatalog = catalog
      lastToolCatalog = { tools: catalog.tools, problems: catalog.problems }
    }
    return lastToolCatalog
  }

  const run = (name: string, file: string, inputJson: string): Effect.Effect<ToolResult> =>
    Effect.suspend(() => {
      // A claw without the execute bit is still a shell script: run it with sh,
      // as the README's "drop a file in claws/" promises.
      const executable = isExecutable(file)
      const request: ChildProcess.RunRequest = {
        command: executable ? file : "/bin/sh",
        args: executable ? [name, inputJson] : [file, name, inputJson],
        // Made and removed where the claw is started (the spawn helper), not on the agent's thread.
        cwd: { privateIn: Path.resolve(Os.tmpdir()), prefix: "planckclaw-claw-" },
        env: childEnvironment(config.withheldSecrets),
        stdoutMax: config.outputMax,
        stderrMax: stderrExcerptMax,
        floodAllowance
      }
      const notStarted = (reason: string, logged: string) =>
        Effect.logWarning(`claw ${name} could not be started: ${logged}`).pipe(
          Effect.as<ToolResult>({ content: `Tool ${name} could not be started: ${reason}`, isError: true })
        )
      return helper.run(request).pipe(
        Effect.timeoutOption(config.timeout),
        Effect.flatMap(Option.match({
          onNone: () =>
            Effect.succeed<ToolResult>({
              content: `Tool ${name} timed out after ${Duration.format(config.timeout)}`,
              isError: true
            }),
          onSome: (outcome) => {
            // How the shell that execs the claw ends when the exec failed: only then is its #! line read.
            const execFailed = executable && outcome.stdout.length === 0 && (outcome.exitCode === 126 || outcome.exitCode === 127)
            const problem = execFailed ? interpreterProblem(file) : undefined
            if (problem !== undefined) return notStarted(problem, `${problem} (${printable(file)})`)
            const result = formatOutcome(name, outcome, request)
            const hint = !executable && result.isError && outcome.flooded === null ? ranWithShHint(file) : undefined
            return Effect.succeed(hint === undefined ? result : { ...result, content: `${result.content}\n[tool ${name}: ${hint}]` })
          }
        })),
        Effect.catchTag("SpawnError", (error) =>
          // The input travels as one argv string, which Linux caps at 128 KiB.
          notStarted(
            errnoCode(error.cause) === "E2BIG" ? "its input is too large to pass as a command-line argument" : error.message,
            error.message
          )),
        Effect.catchTag("SpawnHelperDied", (error) =>
          Effect.as(Effect.logWarning(`claw ${name} was cut short (${printable(file)}): ${error.message}`), cutShort(name, error.ended)))
      )
    })

  const call = (name: string, input: unknown): Effect.Effect<ToolResult> =>
    Effect.gen(function*() {
      // The catalogue as it is now, without the catch-up: the turn's own
      // list let every earlier change in, and what the watch reported since
      // is in this scan too (a stat of the directory when nothing changed).
      const catalog = yield* scanAndReport
      const file = catalog.files.get(name)
      if (file === undefined) return unknownTool(name)
      if (!isJsonObject(input)) {
        return { content: `Tool ${name}: input must be a JSON object, got ${describeJsonType(input)}`, isError: true }
      }
      const inputJson = Result.try(() => JSON.stringify(input))
      if (Result.isFailure(inputJson)) {
        return { content: `Tool ${name}: input cannot be encoded as JSON (${describeError(inputJson.failure)})`, isError: true }
      }
      return yield* run(name, file, inputJson.success)
    }).pipe(Tracing.withSpan("ScriptClaws.call", { tool: name }))

  const service: ClawsService = {
    list: Effect.map(list, toToolCatalog),
    listOnRequest: Effect.map(listAfter(catchUps.request), toToolCatalog),
    call
  }
  return service
}

/**
 * The spawn helper claws start from, and the watchdog of what they start:
 * what `layer` needs, ended with the scope it is provided in (a command
 * provides it at its entry; an embedder beside `layer`).
 */
export const processesLayer = SpawnHelper.layer
// Named here so a host can write the types of `layer` and `processesLayer`.
export type { SpawnHelper } from "../runtime/process/SpawnHelper.js"
export type { Watchdog } from "../runtime/process/Watchdog.js"

/** Needs the spawn helper its claws start from (processesLayer). */
export const layer: Layer.Layer<Claws, Config.ConfigError, SpawnHelper.SpawnHelper> = Layer.effect(
  Claws,
  Effect.flatMap(ScriptsConfig, makeWatched)
)
