/**
 * The MCP servers of serve's agents' own mcp.json files, one process (or
 * HTTP session) per server however many agents name it: an RcMap keyed by
 * the entry's identity (command, args, env and cwd; or url and headers),
 * its name aside. An agent holds each of its servers while it is started;
 * a server no started agent holds is stopped after `idle`. At most
 * `capacity` servers at once (PLANCKCLAW_MCP_SERVERS_MAX, the idle ones
 * counted): past it, a new one is refused, with why.
 *
 * The MCP client is loaded on the first server's lookup, not before.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Hash from "effect/Hash"
import * as RcMap from "effect/RcMap"
import type * as Scope from "effect/Scope"
import type { ServerEntry } from "../../claws/mcp/McpConfig.js"
import type { Connection, ConnectionSettings } from "../../claws/mcp/McpConnection.js"
import * as ScriptClaws from "../../claws/ScriptClaws.js"
import { numberOf } from "../../config/ConfigRange.js"
import { McpServersMax } from "../../config/settings/Serve.js"

/** How long a server no started agent uses is kept, so an agent released and asked again finds it up. */
export const idleRelease = Duration.minutes(1)

export interface McpPool {
  /** The server of `entry`, held for the caller's scope; fails with why when the bound is reached. */
  readonly acquire: (entry: ServerEntry) => Effect.Effect<Connection, string, Scope.Scope>
}

const sorted = (record: Readonly<Record<string, string>>) => Object.entries(record).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)

/** What makes two entries the same server: all but its name. */
export const identity = (entry: ServerEntry): string =>
  entry._tag === "Stdio"
    ? JSON.stringify(["stdio", entry.command, entry.args, sorted(entry.env), entry.cwd])
    : JSON.stringify(["http", entry.url, sorted(entry.headers)])

/**
 * A server as the pool's key: equal to any entry of the same identity,
 * whatever its name. The pool keeps the key of the acquire that started the
 * server, and forgets it with the server: its entry (the first name, in its
 * log lines) lives as long as the process, not as long as the host.
 */
class ServerKey implements Equal.Equal {
  readonly id: string
  constructor(readonly entry: ServerEntry) {
    this.id = identity(entry)
  }
  [Equal.symbol](that: Equal.Equal): boolean {
    return that instanceof ServerKey && that.id === this.id
  }
  [Hash.symbol](): number {
    return Hash.string(this.id)
  }
}

export const make = (options: {
  readonly capacity: number
  readonly idle?: Duration.Duration
  readonly connection: ConnectionSettings
}): Effect.Effect<McpPool, never, Scope.Scope> =>
  Effect.gen(function*() {
    const servers = yield* RcMap.make({
      lookup: (key: ServerKey) =>
        Effect.flatMap(
          Effect.promise(() => import("../../claws/mcp/McpClaws.js")),
          (McpClaws) => McpClaws.connectOnPlatform(key.entry, options.connection)
        ),
      capacity: options.capacity,
      idleTimeToLive: options.idle ?? idleRelease
    })
    const acquire = (entry: ServerEntry) =>
      Effect.suspend(() => RcMap.get(servers, new ServerKey(entry))).pipe(Effect.mapError((error) =>
        Cause.isExceededCapacityError(error)
          ? `refused: ${options.capacity} MCP servers already run for the agents (${McpServersMax.key}); ` +
            "it starts once one of them is no longer used"
          : String(error)
      ))
    return { acquire }
  })

/**
 * The pool of the settings in context: PLANCKCLAW_MCP_SERVERS_MAX servers,
 * under the claws' limits (serve's, and `tools` and `doctor` with --agent).
 * `logDown`: whether a server that goes down is logged (the commands say it in their lines).
 */
export const fromSettings = (options: { readonly logDown: boolean }) =>
  Effect.gen(function*() {
    const claws = yield* ScriptClaws.ScriptsConfig
    return yield* make({
      capacity: yield* numberOf(McpServersMax),
      connection: {
        timeout: claws.timeout,
        outputMax: claws.outputMax,
        withheldSecrets: claws.withheldSecrets,
        logDown: options.logDown
      }
    })
  })
