/**
 * The discord.js client and its login. A failed login (Discord unreachable,
 * 5xx) is retried on the reconnect backoff; a rejected token or a refused
 * privileged intent is a StartupError with what to do, never retried.
 */
import { Client, GatewayIntentBits, type IIdentifyThrottler } from "discord.js"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import { StartupError } from "../../StartupError.js"
import { describeRestError, invalidTokenHelp, isTokenRejected, LoginFailed } from "./Errors.js"
import { reconnectBackoff, seconds } from "./Pacing.js"
import { type GatewayHooks, PacedShardingStrategy } from "./ShardingStrategy.js"

/** How the client reaches back into the bridge. */
export interface ClientCallbacks {
  readonly hooks: GatewayHooks
  readonly identifyThrottler: IIdentifyThrottler
  /** discord.js's "error" events: logged, never fatal. */
  readonly onClientError: (error: Error) => void
}

export interface LoginOptions {
  readonly apiUrl: string
  readonly token: string
  readonly callbacks: ClientCallbacks
  /** Runs before each attempt makes its client. */
  readonly onNewClient: Effect.Effect<void>
  /** The help for a fatal gateway close seen since the last call, if any. */
  readonly takeFatalCloseHelp: Effect.Effect<Option.Option<string>>
}

const newClient = (apiUrl: string, callbacks: ClientCallbacks): Client => {
  const client = new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
      GatewayIntentBits.DirectMessages
    ],
    rest: { api: apiUrl, retries: 0, timeout: 15_000 },
    ws: {
      buildStrategy: (manager) => new PacedShardingStrategy(manager, callbacks.hooks),
      buildIdentifyThrottler: () => callbacks.identifyThrottler
    }
  })
  client.on("error", callbacks.onClientError)
  return client
}

const destroyClient = (client: Client) =>
  Effect.tryPromise(() => client.destroy()).pipe(Effect.timeout("10 seconds"), Effect.ignore)

/** Whether a failed login is worth retrying (LoginFailed) or needs the user (StartupError). */
const classifyLoginFailure = (options: LoginOptions, cause: unknown) =>
  Effect.gen(function*() {
    const help = yield* options.takeFatalCloseHelp
    if (Option.isSome(help)) return yield* new StartupError({ exitCode: 2, message: help.value })
    if (isTokenRejected(cause)) {
      return yield* new StartupError({ exitCode: 2, message: `${invalidTokenHelp} (REST 401)` })
    }
    return yield* new LoginFailed({ message: describeRestError(cause) })
  })

/** One attempt with a new client, which stays in `scope` if it logs in and is destroyed at once if not. */
const loginOnce = (options: LoginOptions, scope: Scope.Scope) =>
  Effect.gen(function*() {
    yield* options.onNewClient
    const attempt = yield* Scope.fork(scope, ExecutionStrategy.sequential)
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => newClient(options.apiUrl, options.callbacks)),
      destroyClient
    ).pipe(Scope.extend(attempt))
    yield* Effect.tryPromise({ try: () => client.login(options.token), catch: (cause) => cause }).pipe(
      Effect.tapError(() => Scope.close(attempt, Exit.void)),
      Effect.catchAll((cause) => classifyLoginFailure(options, cause))
    )
  })

/** Logs in, retrying with backoff while Discord is unreachable; the client lives as long as the scope. */
export const login = (options: LoginOptions): Effect.Effect<void, StartupError, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    yield* loginOnce(options, scope).pipe(
      Effect.tapError((error) =>
        error._tag === "LoginFailed" ? Effect.logWarning(`Discord login failed: ${error.message}`) : Effect.void
      ),
      Effect.retry({
        schedule: reconnectBackoff.pipe(
          Schedule.tapOutput((delay) => Effect.logWarning(`Trying the Discord login again in ${seconds(delay)}`))
        ),
        while: (error) => error._tag === "LoginFailed"
      }),
      Effect.catchTag("LoginFailed", (error) => new StartupError({ exitCode: 1, message: error.message }))
    )
  })
