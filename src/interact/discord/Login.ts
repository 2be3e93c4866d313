/**
 * The discord.js client and its login. A failed login (Discord unreachable,
 * 5xx) is retried on the reconnect backoff; a rejected token or a refused
 * privileged intent is a DiscordRefused with what to do, never retried.
 */
import { Client, GatewayIntentBits, type IIdentifyThrottler } from "discord.js"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import { DiscordRefused } from "./DiscordRefused.js"
import { describeRestError, invalidTokenHelp, isTokenRejected, LoginFailed } from "./Refusals.js"
import { reconnectBackoff, seconds } from "./Pacing.js"
import { type GatewayHooks, PacedShardingStrategy } from "./ShardingStrategy.js"

/** How the client reaches back into the adapter. */
export interface ClientCallbacks {
  readonly hooks: GatewayHooks
  readonly identifyThrottler: IIdentifyThrottler
  /** discord.js's "error" events: logged, never fatal. */
  readonly onClientError: (error: Error) => void
}

export interface LoginOptions {
  readonly apiUrl: string
  readonly token: string
  /** Whether direct messages are answered: without them the Direct Messages intent is not asked for. */
  readonly directMessages: boolean
  readonly callbacks: ClientCallbacks
  /** Runs before each attempt makes its client. */
  readonly onNewClient: Effect.Effect<void>
  /** The refusal a fatal gateway close since the last call stands for, if any. */
  readonly takeFatalClose: Effect.Effect<Option.Option<DiscordRefused>>
}

/** Only what the settings use: guilds (channels, threads), their messages and their text, and DMs when answered. */
export const intentsFor = (directMessages: boolean): Array<GatewayIntentBits> => [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.MessageContent,
  ...(directMessages ? [GatewayIntentBits.DirectMessages] : [])
]

const newClient = (options: LoginOptions): Client => {
  const { apiUrl, callbacks } = options
  const client = new Client({
    intents: intentsFor(options.directMessages),
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

/** Whether a failed login is worth retrying (LoginFailed) or needs the user (DiscordRefused). */
const classifyLoginFailure = (options: LoginOptions, cause: unknown) =>
  Effect.gen(function*() {
    const refused = yield* options.takeFatalClose
    if (Option.isSome(refused)) return yield* refused.value
    if (isTokenRejected(cause)) {
      return yield* new DiscordRefused({ reason: "token", message: `${invalidTokenHelp} (REST 401)` })
    }
    return yield* new LoginFailed({ message: describeRestError(cause) })
  })

/** One attempt with a new client, which stays in `scope` if it logs in and is destroyed at once if not. */
const loginOnce = (options: LoginOptions, scope: Scope.Scope) =>
  Effect.gen(function*() {
    yield* options.onNewClient
    const attempt = yield* Scope.fork(scope, "sequential")
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => newClient(options)),
      destroyClient
    ).pipe(Scope.provide(attempt))
    yield* Effect.tryPromise({ try: () => client.login(options.token), catch: (cause) => cause }).pipe(
      Effect.tapError(() => Scope.close(attempt, Exit.void)),
      Effect.catch((cause) => classifyLoginFailure(options, cause))
    )
  })

/**
 * Logs in, retrying with backoff while Discord is unreachable (and giving up
 * as `unreachable` when the backoff runs out); the client lives as long as
 * the scope.
 */
export const login = (options: LoginOptions): Effect.Effect<void, DiscordRefused, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    yield* loginOnce(options, scope).pipe(
      Effect.tapError((error) =>
        error._tag === "LoginFailed" ? Effect.logWarning(`Discord login failed: ${error.message}`) : Effect.void
      ),
      // The retry is announced only when it will happen: a refusal (a rejected token) is never retried.
      Effect.retry(
        reconnectBackoff.pipe(
          Schedule.setInputType<LoginFailed | DiscordRefused>(),
          Schedule.while(({ input }) => input._tag === "LoginFailed"),
          Schedule.tap(({ duration }) => Effect.logWarning(`Trying the Discord login again in ${seconds(duration)}`))
        )
      ),
      Effect.catchTag("LoginFailed", (error) => Effect.fail(new DiscordRefused({ reason: "unreachable", message: error.message })))
    )
  })
