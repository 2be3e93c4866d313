/**
 * The Discord bridge: messages from chosen Discord channels (and, if allowed,
 * direct messages) in, replies out. discord.js types stay in this file.
 *
 * Who does what:
 * - discord.js owns the gateway connection: IDENTIFY, heartbeats, RESUME and
 *   reconnects. Its shards run under a sharding strategy of ours, through
 *   which the bridge paces connection attempts after a failed one
 *   (exponential backoff from 5 s to 60 s with jitter, reset once a
 *   connection is healthy), throttles IDENTIFY, sees close codes, and reads
 *   MESSAGE_CREATE straight off the gateway, decoded with Schema. Only the
 *   dispatches discord.js needs for its connection state reach it, so message
 *   traffic never grows its caches and a malformed message cannot throw
 *   inside it.
 * - A failed login (Discord unreachable, 5xx) is retried on the same backoff.
 * - Replies go through a REST client of their own (@discordjs/rest, which
 *   waits out 429s as Retry-After says), so they are delivered while the
 *   gateway reconnects. 5xx and network failures are retried on an explicit
 *   Schedule; each part carries a nonce Discord uses to drop duplicates.
 * - A rejected token or a refused privileged intent is reported once with
 *   what to do, and never retried.
 */
import { randomBytes } from "node:crypto"
import {
  Client,
  DiscordAPIError,
  DiscordjsError,
  DiscordjsErrorCodes,
  type GatewayDispatchPayload,
  type GatewaySendPayload,
  GatewayIntentBits,
  HTTPError,
  type IShardingStrategy,
  RateLimitError,
  REST,
  Routes,
  SimpleShardingStrategy,
  type WebSocketOptions,
  WebSocketShardStatus
} from "discord.js"
import {
  Clock,
  Config,
  ConfigError,
  Data,
  Deferred,
  Duration,
  Effect,
  Either,
  ExecutionStrategy,
  Exit,
  FiberSet,
  Layer,
  Option,
  Queue,
  Redacted,
  Ref,
  Runtime,
  Schedule,
  Schema,
  Scope,
  Stream
} from "effect"
import { type InboundMessage, Interact, InteractError, type InteractService, type OutboundMessage } from "../Interact.js"
import { StartupError } from "../StartupError.js"
import { chunkReply } from "./ReplyChunks.js"
import * as Typing from "./Typing.js"

// ---------------------------------------------------------------------------
// Configuration

export interface DiscordSettings {
  readonly token: Redacted.Redacted<string>
  /** Channels whose messages are answered. */
  readonly channelIds: ReadonlyArray<string>
  /** When set, only these users are answered. */
  readonly allowedUsers: Option.Option<ReadonlyArray<string>>
  /** Answer direct messages (from allowed users). */
  readonly directMessages: boolean
  /** REST base, without the version: discord.js adds /v10. */
  readonly apiUrl: string
}

const snowflake = /^\d{1,20}$/

const parseIds = (name: string, raw: string): Either.Either<ReadonlyArray<string>, ConfigError.ConfigError> => {
  const ids = raw.split(",").map((id) => id.trim()).filter((id) => id !== "")
  // Config.mapOrFail puts the key's name in front of the path.
  if (ids.length === 0) return Either.left(ConfigError.InvalidData([], `${name} holds no id`))
  const bad = ids.find((id) => !snowflake.test(id))
  return bad === undefined
    ? Either.right(ids)
    : Either.left(ConfigError.InvalidData(
      [],
      `"${bad}" is not a Discord id (digits only; in Discord, enable Developer Mode and use Copy ID)`
    ))
}

/**
 * DISCORD_BOT_TOKEN (secret; checked by `layer`, which reports a missing one
 * as a StartupError), DISCORD_CHANNEL_ID (one id or a comma-separated list),
 * DISCORD_ALLOWED_USERS (optional list), DISCORD_DMS (1/0, default 0),
 * DISCORD_API_URL (default https://discord.com/api). An empty value counts as
 * unset, as config.env writes them.
 */
export const DiscordConfig = Config.all({
  token: Config.option(Config.redacted("DISCORD_BOT_TOKEN")),
  channelIds: Config.string("DISCORD_CHANNEL_ID").pipe(
    Config.mapOrFail((raw) => parseIds("DISCORD_CHANNEL_ID", raw))
  ),
  allowedUsers: Config.string("DISCORD_ALLOWED_USERS").pipe(
    Config.withDefault(""),
    Config.mapOrFail((raw) =>
      raw.trim() === "" ? Either.right(Option.none()) : Either.map(parseIds("DISCORD_ALLOWED_USERS", raw), Option.some)
    )
  ),
  directMessages: Config.string("DISCORD_DMS").pipe(
    Config.withDefault(""),
    Config.mapOrFail((raw) => {
      const value = raw.trim().toLowerCase()
      if (["", "0", "false", "no", "off", "n"].includes(value)) return Either.right(false)
      if (["1", "true", "yes", "on", "y"].includes(value)) return Either.right(true)
      return Either.left(ConfigError.InvalidData([], `"${raw}" is not 1 or 0`))
    })
  ),
  apiUrl: Config.string("DISCORD_API_URL").pipe(
    Config.withDefault(""),
    Config.mapOrFail((raw) => {
      const url = raw.trim() === "" ? "https://discord.com/api" : raw.trim()
      return /^https?:\/\/\S+$/.test(url)
        ? Either.right(url.replace(/\/+$/, "").replace(/\/v\d+$/, ""))
        : Either.left(ConfigError.InvalidData([], `"${raw}" is not an http(s) URL`))
    })
  )
})

// ---------------------------------------------------------------------------
// Timing

/** Gateway reconnects and logins after a failure: 5 s doubling to 60 s, with jitter. Outputs each delay. */
export const reconnectBackoff: Schedule.Schedule<Duration.Duration> = Schedule.exponential("5 seconds").pipe(
  Schedule.jittered,
  Schedule.modifyDelay((_, delay) => Duration.min(delay, Duration.seconds(60))),
  Schedule.delays
)

/** A failed part of a reply (5xx, network, timeout): about two minutes of retries, then give up. */
const sendRetry = Schedule.exponential("1 second").pipe(
  Schedule.jittered,
  Schedule.modifyDelay((_, delay) => Duration.min(delay, Duration.seconds(30))),
  Schedule.intersect(Schedule.recurs(7))
)

/** Longest one part of a reply may take, rate limits included. */
const partDeadline = Duration.minutes(3)

/** A 429 asking for a longer wait than this fails the part at once instead of sleeping. */
const longestRateLimitWait = Duration.minutes(1)

/**
 * discord.js waits out a 429 as its Retry-After header says. Without the
 * header it would retry at once, again and again; and a very long wait would
 * outlast the part's deadline. Both are turned into errors: the first is
 * retried on our schedule, the second fails the part.
 */
const rejectRateLimit = (limit: { readonly retryAfter: number }): boolean =>
  limit.retryAfter <= 0 || limit.retryAfter > Duration.toMillis(longestRateLimitWait)

/** Discord allows one IDENTIFY per five seconds. */
const identifyInterval = Duration.seconds(5)

// ---------------------------------------------------------------------------
// Errors and their explanations

class LoginFailed extends Data.TaggedError("LoginFailed")<{ readonly message: string }> {}

const invalidTokenHelp = "Discord rejected DISCORD_BOT_TOKEN. In the Discord developer portal " +
  "(https://discord.com/developers/applications) open your application → Bot → Reset Token, " +
  "and put the new token in DISCORD_BOT_TOKEN."

const fatalCloseCodes: ReadonlyMap<number, string> = new Map([
  [4004, `${invalidTokenHelp} (gateway close 4004)`],
  [
    4014,
    "Discord refused the Message Content intent (gateway close 4014). In the Discord developer portal " +
    "(https://discord.com/developers/applications) open your application → Bot → Privileged Gateway Intents, " +
    "switch on Message Content Intent, save, and start again."
  ],
  [4013, "Discord rejected the gateway intents as invalid (gateway close 4013)."],
  [4012, "Discord rejected the gateway API version (gateway close 4012); upgrade discord.js."],
  [4011, "Discord requires sharding for this bot (gateway close 4011): it is in too many servers for one connection."],
  [4010, "Discord rejected the shard settings (gateway close 4010)."]
])

const describeRestError = (cause: unknown): string => {
  if (cause instanceof DiscordAPIError) {
    const hint = cause.status === 403
      ? " (the bot needs View Channel and Send Messages there)"
      : cause.status === 401
      ? " (the bot token was rejected)"
      : ""
    return `${cause.status} ${cause.message}${hint}`
  }
  if (cause instanceof HTTPError) return `${cause.status} ${cause.message}`
  if (cause instanceof RateLimitError) {
    return cause.retryAfter > 0
      ? `rate limited by Discord for ${Math.ceil(cause.retryAfter / 1000)} s`
      : "rate limited by Discord (429 without Retry-After)"
  }
  if (cause instanceof Error) return cause.message
  return String(cause)
}

/** Discord refused the request (4xx), or asked for a longer wait than we give a part: retrying cannot help. */
const isPermanent = (cause: unknown): boolean =>
  cause instanceof DiscordAPIError || (cause instanceof RateLimitError && cause.retryAfter > 0)

// ---------------------------------------------------------------------------
// Inbound messages

const GatewayMessage = Schema.Struct({
  id: Schema.String,
  channel_id: Schema.String,
  guild_id: Schema.optionalWith(Schema.String, { nullable: true }),
  channel_type: Schema.optionalWith(Schema.Number, { nullable: true }),
  webhook_id: Schema.optionalWith(Schema.String, { nullable: true }),
  type: Schema.optionalWith(Schema.Number, { nullable: true }),
  content: Schema.optionalWith(Schema.String, { nullable: true, default: () => "" }),
  author: Schema.Struct({
    id: Schema.String,
    bot: Schema.optionalWith(Schema.Boolean, { nullable: true, default: () => false })
  })
})
type GatewayMessage = typeof GatewayMessage.Type

const GatewayReady = Schema.Struct({ user: Schema.Struct({ id: Schema.String, username: Schema.String }) })

const decodeMessage = Schema.decodeUnknownEither(GatewayMessage)
const decodeReady = Schema.decodeUnknownEither(GatewayReady)

/** Ordinary messages and replies; joins, pins and other system messages are not talk. */
const conversationalTypes = new Set([0, 19])
const directMessageChannelType = 1

/** The message for the agent, or undefined when this one is not for us. */
const admit = (
  settings: DiscordSettings,
  botUserId: string | undefined,
  message: GatewayMessage
): InboundMessage | undefined => {
  if (message.author.bot || message.author.id === botUserId || message.webhook_id !== undefined) return undefined
  if (message.type !== undefined && !conversationalTypes.has(message.type)) return undefined
  const inChannel = settings.channelIds.includes(message.channel_id)
  const direct = !inChannel && message.guild_id === undefined &&
    (message.channel_type === undefined || message.channel_type === directMessageChannelType)
  if (!inChannel && !(direct && settings.directMessages)) return undefined
  if (Option.isSome(settings.allowedUsers) && !settings.allowedUsers.value.includes(message.author.id)) return undefined
  const text = withoutMention(message.content, botUserId).trim()
  return text === "" ? undefined : { channel: message.channel_id, text }
}

const withoutMention = (content: string, botUserId: string | undefined): string =>
  botUserId === undefined ? content : content.replace(new RegExp(` ?<@!?${botUserId}> ?`, "g"), " ")

/** Ids of recently accepted messages: a replayed or repeated MESSAGE_CREATE is answered once. */
const rememberedMessages = 1000

/** Dispatches discord.js needs to track its connection; everything else stays with the bridge. */
const dispatchesForDiscordJs = new Set(["READY", "RESUMED", "GUILD_CREATE", "GUILD_DELETE"])

// ---------------------------------------------------------------------------
// The gateway hook: discord.js's own sharding strategy, seeing the manager through a view of ours

interface GatewayHooks {
  /** Resolves when a shard may open a connection (after any backoff). */
  readonly beforeConnect: () => Promise<void>
  readonly healthy: () => void
  readonly closed: (code: number) => void
  readonly dispatch: (payload: GatewayDispatchPayload) => void
  /** Hands an event to discord.js, guarded so a throw inside it is logged, not fatal. */
  readonly forward: (emit: () => boolean, event: string) => boolean
}

type GatewayManager = Parameters<NonNullable<WebSocketOptions["buildStrategy"]>>[0]

interface ShardEventEmitter {
  emit(event: string, payload: unknown): boolean
}

const never = new Promise<never>(() => undefined)

/**
 * discord.js's SimpleShardingStrategy runs the shards; it reaches its manager
 * only for options, gateway information and events. Through this view, a
 * shard opening a connection (it asks for its session first, while idle)
 * waits for our backoff, and every shard event passes us first.
 */
class PacedShardingStrategy implements IShardingStrategy {
  private readonly inner: SimpleShardingStrategy
  private destroyed = false

  constructor(manager: GatewayManager, hooks: GatewayHooks) {
    const shardIsIdle = async (shardId: number) =>
      (await this.inner.fetchStatus()).get(shardId) === WebSocketShardStatus.Idle
    const retrieveSessionInfo = async (shardId: number) => {
      if (await shardIsIdle(shardId)) {
        // discord.js can schedule a reconnect just before it is destroyed: that one must never connect.
        if (this.destroyed) return never
        await hooks.beforeConnect()
        if (this.destroyed) return never
      }
      return manager.options.retrieveSessionInfo(shardId)
    }
    const emitter = manager as unknown as ShardEventEmitter
    const view = {
      get options() {
        return { ...manager.options, retrieveSessionInfo }
      },
      fetchGatewayInformation: (force?: boolean) => manager.fetchGatewayInformation(force),
      getShardCount: () => manager.getShardCount(),
      emit: (event: string, payload: { readonly data?: GatewayDispatchPayload; readonly code?: number }) => {
        switch (event) {
          case "dispatch":
            if (payload.data === undefined) return false
            hooks.dispatch(payload.data)
            if (!dispatchesForDiscordJs.has(payload.data.t)) return false
            break
          case "ready":
          case "resumed":
            hooks.healthy()
            break
          case "closed":
            hooks.closed(payload.code ?? 0)
            break
        }
        return hooks.forward(() => emitter.emit(event, payload), event)
      }
    }
    this.inner = new SimpleShardingStrategy(view as unknown as GatewayManager)
  }

  // The manager destroys and respawns its shards as it starts; only a destroy after that is final.
  spawn(shardIds: Array<number>) {
    this.destroyed = false
    return this.inner.spawn(shardIds)
  }
  connect() {
    return this.inner.connect()
  }
  destroy(options?: Parameters<IShardingStrategy["destroy"]>[0]) {
    this.destroyed = true
    return this.inner.destroy(options)
  }
  send(shardId: number, payload: GatewaySendPayload) {
    return this.inner.send(shardId, payload)
  }
  fetchStatus() {
    return this.inner.fetchStatus()
  }
}

// ---------------------------------------------------------------------------
// The bridge

const seconds = (delay: Duration.Duration): string => `${Math.round(Duration.toSeconds(delay))} s`

const isTokenRejected = (cause: unknown): boolean =>
  (cause instanceof DiscordjsError && cause.code === DiscordjsErrorCodes.TokenInvalid) ||
  (cause instanceof DiscordAPIError && cause.status === 401)

/**
 * Logs in (retrying with backoff while Discord is unreachable) and returns
 * once the gateway is READY. Fails with a StartupError when Discord rejects
 * the token or the intents.
 */
export const make = (settings: DiscordSettings): Effect.Effect<InteractService, StartupError, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    // Tokens are often pasted with the "Bot " prefix of the Authorization header.
    const token = Redacted.value(settings.token).trim().replace(/^(Bot|Bearer)\s+/i, "")
    const runtime = yield* Effect.runtime<never>()
    const runNow = Runtime.runSyncExit(runtime)
    const runInBackground = yield* FiberSet.makeRuntime<never>()
    const report = (exit: Exit.Exit<unknown, unknown>) => {
      if (Exit.isFailure(exit)) runInBackground(Effect.logError("Discord bridge: a gateway event failed", exit.cause))
    }

    const inbound = yield* Effect.acquireRelease(Queue.unbounded<InboundMessage>(), Queue.shutdown)
    const fatal = yield* Deferred.make<never, InteractError>()
    const botUser = yield* Ref.make(Option.none<typeof GatewayReady.Type["user"]>())
    const recentIds = yield* Ref.make<ReadonlyArray<string>>([])
    const started = yield* Ref.make(false)
    const shuttingDown = yield* Ref.make(false)
    const fatalClose = yield* Ref.make(Option.none<number>())

    // -- REST, for replies and the typing indicator
    const rest = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new REST({
          api: settings.apiUrl,
          version: "10",
          retries: 0,
          timeout: 15_000,
          rejectOnRateLimit: rejectRateLimit
        }).setToken(token)
      ),
      (rest) =>
        Effect.sync(() => {
          rest.clearHashSweeper()
          rest.clearHandlerSweeper()
        })
    )
    const post = (route: `/${string}`, body?: unknown) =>
      Effect.tryPromise({ try: (signal) => rest.post(route, { body, signal }), catch: (cause) => cause })

    const typing = yield* Typing.make((channel) => post(Routes.channelTyping(channel)))

    // -- Gateway pacing: backoff between failed connection attempts, reset by a healthy one
    const reconnects = yield* Schedule.driver(
      reconnectBackoff.pipe(
        Schedule.tapOutput((delay) =>
          Effect.logWarning(`Discord gateway connection failed; trying again in ${seconds(delay)}`)
        )
      )
    )
    const awaitingHealthy = yield* Ref.make(false)
    const beforeConnect = Effect.gen(function*() {
      const previousFailed = yield* Ref.getAndSet(awaitingHealthy, true)
      if (previousFailed) yield* Effect.ignore(reconnects.next(undefined))
    })
    const onHealthy = Effect.gen(function*() {
      yield* Ref.set(awaitingHealthy, false)
      if (Option.isSome(yield* reconnects.last.pipe(Effect.option))) {
        yield* Effect.logInfo("Discord gateway connected again")
      }
      yield* reconnects.reset
    })

    const identifyGate = yield* Effect.makeSemaphore(1)
    const lastIdentify = yield* Ref.make(Option.none<number>())
    const waitToIdentify = identifyGate.withPermits(1)(Effect.gen(function*() {
      const last = yield* Ref.get(lastIdentify)
      if (Option.isSome(last)) {
        const wait = last.value + Duration.toMillis(identifyInterval) - (yield* Clock.currentTimeMillis)
        if (wait > 0) yield* Effect.sleep(wait)
      }
      yield* Ref.set(lastIdentify, Option.some(yield* Clock.currentTimeMillis))
    }))

    const onClosed = (code: number) =>
      Effect.gen(function*() {
        if (yield* Ref.get(shuttingDown)) return
        const help = fatalCloseCodes.get(code)
        if (help === undefined) return yield* Effect.logWarning(`Discord gateway closed (code ${code}); reconnecting`)
        yield* Ref.set(fatalClose, Option.some(code))
        // Before startup the login fails with this; afterwards the message stream does.
        if (yield* Ref.get(started)) {
          yield* Effect.logError(help)
          yield* Deferred.fail(fatal, new InteractError({ message: help }))
        }
      })

    // -- Inbound messages
    const accept = (message: GatewayMessage) =>
      Effect.gen(function*() {
        const bot = yield* Ref.get(botUser)
        const admitted = admit(settings, Option.getOrUndefined(bot)?.id, message)
        if (admitted === undefined) return
        const fresh = yield* Ref.modify(recentIds, (ids) =>
          ids.includes(message.id)
            ? [false, ids]
            : [true, [...ids.slice(1 - rememberedMessages), message.id]])
        if (!fresh) return
        yield* typing.begin(admitted.channel)
        yield* Queue.offer(inbound, admitted)
      })

    const onDispatch = (payload: GatewayDispatchPayload): Effect.Effect<void> => {
      switch (payload.t) {
        case "READY":
          return Either.match(decodeReady(payload.d), {
            onLeft: () => Effect.logWarning("Discord READY without a user: the bot's own mentions stay in the text"),
            onRight: (ready) => Ref.set(botUser, Option.some(ready.user))
          })
        case "MESSAGE_CREATE":
          return Either.match(decodeMessage(payload.d), {
            onLeft: () => Effect.logDebug("Ignored a MESSAGE_CREATE that does not decode"),
            onRight: accept
          })
        default:
          return Effect.void
      }
    }

    // Callbacks from discord.js: ordering matters for dispatches and closes, so they run synchronously.
    const hooks: GatewayHooks = {
      beforeConnect: () =>
        new Promise((resolve) => {
          runInBackground(beforeConnect).addObserver((exit) => {
            if (Exit.isSuccess(exit)) resolve()
          })
        }),
      healthy: () => report(runNow(onHealthy)),
      closed: (code) => report(runNow(onClosed(code))),
      dispatch: (payload) => report(runNow(onDispatch(payload))),
      forward: (emit, event) => {
        const exit = runNow(
          Effect.try({ try: emit, catch: (cause) => cause }).pipe(
            Effect.tapError((cause) => Effect.logWarning(`discord.js failed on gateway event ${event}; ignored`, cause))
          )
        )
        return Exit.isSuccess(exit) && exit.value
      }
    }
    const identifyThrottler = {
      waitForIdentify: (_shardId: number, signal: AbortSignal) =>
        new Promise<void>((resolve, reject) => {
          const fiber = runInBackground(waitToIdentify)
          const abort = () => fiber.unsafeInterruptAsFork(fiber.id())
          signal.addEventListener("abort", abort, { once: true })
          fiber.addObserver((exit) => {
            signal.removeEventListener("abort", abort)
            if (Exit.isSuccess(exit)) resolve()
            else if (signal.aborted) reject(signal.reason)
          })
        })
    }

    // -- Login
    const newClient = () => {
      const client = new Client({
        intents: [
          GatewayIntentBits.Guilds,
          GatewayIntentBits.GuildMessages,
          GatewayIntentBits.MessageContent,
          GatewayIntentBits.DirectMessages
        ],
        rest: { api: settings.apiUrl, retries: 0, timeout: 15_000 },
        ws: {
          buildStrategy: (manager) => new PacedShardingStrategy(manager, hooks),
          buildIdentifyThrottler: () => identifyThrottler
        }
      })
      client.on("error", (error) => runInBackground(Effect.logWarning("discord.js reported an error", error)))
      return client
    }
    const destroyClient = (client: Client) =>
      Effect.tryPromise(() => client.destroy()).pipe(Effect.timeout("10 seconds"), Effect.ignore)

    const classifyLoginFailure = (cause: unknown) =>
      Effect.gen(function*() {
        const code = yield* Ref.getAndSet(fatalClose, Option.none())
        const help = Option.flatMapNullable(code, (code) => fatalCloseCodes.get(code))
        if (Option.isSome(help)) return yield* new StartupError({ exitCode: 2, message: help.value })
        if (isTokenRejected(cause)) {
          return yield* new StartupError({ exitCode: 2, message: `${invalidTokenHelp} (REST 401)` })
        }
        return yield* new LoginFailed({ message: describeRestError(cause) })
      })

    const loginOnce = Effect.gen(function*() {
      // The login retry has already waited: a new client's first connection goes at once.
      yield* Ref.set(awaitingHealthy, false)
      const attempt = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      const client = yield* Effect.acquireRelease(Effect.sync(newClient), destroyClient).pipe(Scope.extend(attempt))
      yield* Effect.tryPromise({ try: () => client.login(token), catch: (cause) => cause }).pipe(
        Effect.tapError(() => Scope.close(attempt, Exit.void)),
        Effect.catchAll(classifyLoginFailure)
      )
    })

    yield* loginOnce.pipe(
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
    yield* Ref.set(started, true)
    // Added after the client, so it runs first on release: our own close is not news.
    yield* Effect.addFinalizer(() => Ref.set(shuttingDown, true))

    const user = Option.getOrUndefined(yield* Ref.get(botUser))
    yield* Effect.logInfo(
      `Discord bridge connected${user === undefined ? "" : ` as ${user.username}`}; answering in channel(s) ` +
        settings.channelIds.join(", ") + (settings.directMessages ? " and in direct messages" : "")
    )
    if (settings.directMessages && Option.isNone(settings.allowedUsers)) {
      yield* Effect.logWarning(
        "DISCORD_DMS is on and DISCORD_ALLOWED_USERS is not set: anyone who can message the bot directly is answered"
      )
    }

    // -- Replies
    const sendLock = yield* Effect.makeSemaphore(1)
    const postPart = (channel: string, content: string) =>
      Effect.gen(function*() {
        // The same nonce on every retry lets Discord drop a duplicate of a part that did arrive.
        const nonce = yield* Effect.sync(() => randomBytes(12).toString("hex"))
        yield* post(Routes.channelMessages(channel), {
          content,
          nonce,
          enforce_nonce: true,
          allowed_mentions: { parse: [] }
        }).pipe(
          Effect.tapError((cause) =>
            isPermanent(cause)
              ? Effect.void
              : Effect.logWarning(`Discord send to channel ${channel} failed (${describeRestError(cause)}); retrying`)
          ),
          Effect.retry({ schedule: sendRetry, while: (cause) => !isPermanent(cause) }),
          Effect.mapError(describeRestError),
          Effect.timeoutFail({
            duration: partDeadline,
            onTimeout: () => `no success within ${Duration.format(partDeadline)}`
          })
        )
      })

    const send = (message: OutboundMessage): Effect.Effect<void, InteractError> =>
      Effect.gen(function*() {
        const { channel } = message
        if (!snowflake.test(channel)) {
          return yield* new InteractError({ message: `Cannot send to Discord channel "${channel}": not a channel id` })
        }
        const parts = chunkReply(message.text)
        if (parts.length === 0) {
          return yield* Effect.logWarning(`Empty reply for Discord channel ${channel}: nothing sent`)
        }
        for (const [index, part] of parts.entries()) {
          yield* postPart(channel, part).pipe(
            Effect.mapError((reason) =>
              new InteractError({
                message: `Could not deliver a reply to Discord channel ${channel} ` +
                  `(part ${index + 1} of ${parts.length}): ${reason}`
              })
            )
          )
        }
      }).pipe(
        sendLock.withPermits(1),
        Effect.tapError((error) => Effect.logError(error.message)),
        Effect.ensuring(typing.end(message.channel))
      )

    return {
      messages: Stream.fromQueue(inbound).pipe(Stream.interruptWhen(Deferred.await(fatal))),
      send
    }
  })

/** The Discord bridge from configuration; see `DiscordConfig` and `make`. */
export const layer: Layer.Layer<Interact, ConfigError.ConfigError | StartupError> = Layer.scoped(
  Interact,
  Effect.gen(function*() {
    const config = yield* DiscordConfig
    const token = Option.filter(config.token, (token) => Redacted.value(token).trim() !== "")
    if (Option.isNone(token)) {
      return yield* new StartupError({
        exitCode: 2,
        message: "DISCORD_BOT_TOKEN is not set: create a bot at https://discord.com/developers/applications " +
          "(your application → Bot → Reset Token) and set DISCORD_BOT_TOKEN in config.env or the environment"
      })
    }
    return yield* make({ ...config, token: token.value })
  })
)
