/**
 * The limits `serve`'s HTTP API holds its connections to, and the settings
 * that set them:
 *
 * - PLANCKCLAW_MAX_CONNECTIONS connections at once (HttpConnections answers
 *   a few more 503 and refuses the rest). Each takes a descriptor, and the
 *   process has only `ulimit -n` of them: the cap leaves a reserve for the
 *   agents' memory files, the turns' brain connections and claw pipes, and
 *   the process itself, so a flood of connections never makes an agent's
 *   files fail with EMFILE. Unset, the cap is the open-file limit less the
 *   reserve, at most DEFAULT_MAX_CONNECTIONS; set, it must leave the reserve
 *   (else serve refuses to start, saying how much it may be).
 * - PLANCKCLAW_HTTP_REQUEST_TIMEOUT: a connection has that long to send a
 *   whole request, headers and body (a new connection too): a 408 after it.
 * - PLANCKCLAW_HTTP_IDLE_TIMEOUT: a kept-alive connection without a request.
 * - PLANCKCLAW_STOP_GRACE: what a stop gives the requests in flight.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import { invalidSetting, invalidSettings, numberOf, optionalNumberOf } from "../../config/ConfigRange.js"
import { HttpIdleTimeout, HttpRequestTimeout, MaxConnections, StopGrace } from "../../config/settings/Serve.js"
import { HostConfig } from "./AgentHost.js"

/** The cap when PLANCKCLAW_MAX_CONNECTIONS is unset and the open-file limit allows it. */
export const DEFAULT_MAX_CONNECTIONS = 1024
/** Connections over the cap answered 503 (each until its first request or its request timeout); beyond, refused at once. */
export const OVER_CAP_ANSWERED = 16
/** Descriptors for the process itself (its event loop, stdio, the listening socket) and an agent's start (lock, soul, config.env, keys). */
const PROCESS_RESERVE = 64

export const LimitsConfig = Config.all({
  maxConnections: optionalNumberOf(MaxConnections),
  requestSeconds: numberOf(HttpRequestTimeout),
  idleSeconds: numberOf(HttpIdleTimeout),
  stopGraceSeconds: numberOf(StopGrace),
  // What the reserve is made of, as the host declares it.
  host: Config.map(HostConfig, ({ agentsHoldingFiles, maxConcurrentTurns }) => ({ agentsHoldingFiles, maxConcurrentTurns }))
})

export interface Limits {
  readonly maxConnections: number
  readonly requestSeconds: number
  readonly idleSeconds: number
  readonly stopGraceSeconds: number
}

/** Descriptors kept from connections: 4 memory files per agent holding them, 4 per turn (brain connection, claw pipes). */
export const reserveFor = (host: { readonly agentsHoldingFiles: number; readonly maxConcurrentTurns: number }): number =>
  PROCESS_RESERVE + OVER_CAP_ANSWERED + 4 * host.agentsHoldingFiles + 4 * host.maxConcurrentTurns

/** A soft limit as Linux or `ulimit -n` print it; None for "unlimited" or anything unreadable. */
const limitIn = (text: string | undefined): Option.Option<number> =>
  text !== undefined && /^\d{1,12}$/.test(text) ? Option.some(Number(text)) : Option.none()

/**
 * This process's soft limit on open descriptors (`ulimit -n`; Node raises it
 * to the hard limit at start): /proc/self/limits on Linux, else what a shell
 * started from here reports (it inherits the limit). None when unknown.
 */
export const openFileLimit: Effect.Effect<Option.Option<number>> = Effect.sync(() => {
  const proc = Result.try(() => fs.readFileSync("/proc/self/limits", "utf8"))
  if (Result.isSuccess(proc)) return limitIn(/^Max open files\s+(\S+)/m.exec(proc.success)?.[1])
  const shell = Result.try(() => child.execFileSync("/bin/sh", ["-c", "ulimit -n"], { encoding: "utf8", timeout: 5000 }))
  return Result.isSuccess(shell) ? limitIn(shell.success.trim()) : Option.none()
})

/**
 * The limits, the cap checked against the open-file limit `limit` (None:
 * unknown, nothing to check). A cap that leaves no reserve is a settings
 * error saying what to set.
 */
export const resolve = (
  config: Config.Success<typeof LimitsConfig>,
  limit: Option.Option<number>
): Result.Result<Limits, Config.ConfigError> => {
  const { host, maxConnections, ...timeouts } = config
  const reserve = reserveFor(host)
  const why = (files: number) =>
    `the open-file limit (ulimit -n) is ${files} and ${reserve} descriptors are kept in reserve: 4 for each of ` +
    `PLANCKCLAW_AGENTS_HOLDING_FILES (${host.agentsHoldingFiles}) agents' memory files, 4 for each of PLANCKCLAW_MAX_CONCURRENT_TURNS ` +
    `(${host.maxConcurrentTurns}) turns' brain connection and claw pipes, ${PROCESS_RESERVE + OVER_CAP_ANSWERED} for the process ` +
    "and the connections answered 503 over the cap"
  if (Option.isNone(limit)) {
    return Result.succeed({ ...timeouts, maxConnections: Option.getOrElse(maxConnections, () => DEFAULT_MAX_CONNECTIONS) })
  }
  const room = limit.value - reserve
  if (room < 1) {
    return Result.fail(invalidSettings(
      `serve would have no descriptors left for connections: ${why(limit.value)}; raise ulimit -n, or lower ` +
        "PLANCKCLAW_AGENTS_HOLDING_FILES or PLANCKCLAW_MAX_CONCURRENT_TURNS"
    ))
  }
  if (Option.isSome(maxConnections) && maxConnections.value > room) {
    return Result.fail(invalidSetting(
      MaxConnections.key,
      `${maxConnections.value} connections would eat into the descriptors kept in reserve: ${why(limit.value)}; ` +
        `set at most ${room}, or raise ulimit -n`
    ))
  }
  return Result.succeed({ ...timeouts, maxConnections: Option.getOrElse(maxConnections, () => Math.min(DEFAULT_MAX_CONNECTIONS, room)) })
}

/** The limits of this process, checked against its open-file limit. */
export const read: Effect.Effect<Limits, Config.ConfigError> = Effect.flatMap(
  Effect.zip(LimitsConfig, openFileLimit),
  ([config, limit]) => Effect.fromResult(resolve(config, limit))
)
