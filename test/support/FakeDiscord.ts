/**
 * A Discord that lives on loopback: enough of the v10 REST API and gateway
 * for discord.js to log in, receive messages and post replies, with knobs for
 * the failures a bot meets in the wild. It records every request and every
 * gateway frame so tests can assert on what the bot did.
 *
 * REST and gateway listen on separate ports so the gateway can go down (and
 * refuse connections) while REST stays up.
 *
 * Over 300 lines on purpose: `make` is one closure over the state REST and
 * gateway share (sessions, snowflakes, logs, scripted failures); split, that
 * state would have to be threaded through every handler.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, Option, Redacted, type Scope } from "effect"
import type { DiscordSettings } from "../../src/interact/discord/Settings.js"
import { type WebSocket, WebSocketServer } from "ws"

/**
 * The ids most tests use: the bot's token and user, its server, two channels
 * and two people. Snowflakes of the right shape (the bridge checks them); none
 * is a real one.
 */
export const ids = {
  token: "test-bot-token",
  botUserId: "100000000000000001",
  guildId: "200000000000000001",
  channelA: "300000000000000001",
  channelB: "300000000000000002",
  alice: "400000000000000001",
  bob: "400000000000000002"
} as const

/**
 * The bridge's settings for `fake`: its token and channels, no allow list, no direct messages; `overrides`
 * on top (another channel list, a catch-up bound).
 */
export const settingsFor = (fake: FakeDiscord, overrides: Partial<DiscordSettings> = {}): DiscordSettings => ({
  token: Redacted.make(fake.token),
  channelIds: fake.channelIds,
  allowedUsers: Option.none(),
  directMessages: false,
  apiUrl: fake.apiUrl,
  ...overrides
})

export interface FakeDiscordOptions {
  /** The only token accepted, on REST and in IDENTIFY. */
  readonly token: string
  readonly botUserId: string
  readonly guildId: string
  /** Text channels of the guild. */
  readonly channelIds: ReadonlyArray<string>
  /** Close code to answer every IDENTIFY with instead of READY (4004, 4014, …). */
  readonly identifyCloseCode?: number
  /** The application's flags on GET /applications/@me; default: the Message Content intent (limited) on. */
  readonly applicationFlags?: number
  /** Channels the bot may not see: GET /channels/{id} answers 403 Missing Access. */
  readonly hiddenChannelIds?: ReadonlyArray<string>
  /** Categories of the guild (type 4): GET /channels/{id} describes them; they hold no messages. */
  readonly categoryIds?: ReadonlyArray<string>
}

export interface RestRecord {
  readonly method: string
  readonly path: string
  readonly authorization: string | undefined
  readonly body: unknown
  readonly status: number
  /** Date.now() when the request arrived: real time, for rate-limit checks. */
  readonly at: number
}

export type GatewayRecord =
  | { readonly connection: number; readonly event: "opened" }
  | { readonly connection: number; readonly event: "closed"; readonly code: number; readonly by: "server" | "client" }
  | {
    readonly connection: number
    readonly event: "received" | "sent"
    readonly op: number
    readonly t?: string | null
    readonly s?: number | null
    readonly d: any
  }

export interface ScriptedResponse {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: unknown
}

export interface MessageFields {
  readonly channelId: string
  readonly authorId: string
  readonly content: string
  readonly bot?: boolean
  /** A direct message: no guild_id. */
  readonly direct?: boolean
  readonly webhook?: boolean
  /** False: kept in the channel's history (REST) without a MESSAGE_CREATE, as if the gateway lost it. */
  readonly dispatch?: boolean
  readonly attachments?: ReadonlyArray<FakeAttachment>
  /** A forward: Discord sends it with no content of its own, the forwarded message in a snapshot. */
  readonly forwarded?: { readonly content: string; readonly attachments?: ReadonlyArray<FakeAttachment> }
  /** The author's server nickname and display name. */
  readonly nick?: string
  readonly globalName?: string
}

/** An attachment as a message carries it; its file is served on the fake's loopback port. */
export interface FakeAttachment {
  readonly id: string
  readonly filename: string
  readonly size: number
  readonly url: string
  readonly content_type?: string
}

export interface InteractionFields {
  readonly channelId: string
  readonly userId: string
  readonly name: string
  readonly options?: ReadonlyArray<{ readonly name: string; readonly type: number; readonly value: unknown }>
  readonly direct?: boolean
  readonly nick?: string
}

export interface FakeDiscord {
  /** Value for DISCORD_API_URL. */
  readonly apiUrl: string
  /** The token it accepts, and its guild's text channels (as made). */
  readonly token: string
  readonly channelIds: ReadonlyArray<string>
  readonly gatewayUrl: string
  readonly rest: () => ReadonlyArray<RestRecord>
  readonly gateway: () => ReadonlyArray<GatewayRecord>
  /** Completes with the first defined value of `find`, checked now and after every new record. */
  readonly waitFor: <A>(find: () => A | undefined) => Effect.Effect<A>
  /** Sends a dispatch on the live session; while disconnected it is kept for the RESUME replay. */
  readonly dispatch: (t: string, d: Record<string, unknown>) => Effect.Effect<void>
  /** Dispatches a MESSAGE_CREATE and returns the message id. */
  readonly messageCreate: (fields: MessageFields) => Effect.Effect<string>
  /** Closes the live gateway connection from the server side. */
  readonly closeGateway: (code: number) => Effect.Effect<void>
  /** Sends op 9 INVALID_SESSION on the live connection. */
  readonly invalidateSession: (resumable: boolean) => Effect.Effect<void>
  /** Stops listening for gateway connections and drops the live one (no close frame). */
  readonly gatewayDown: Effect.Effect<void>
  readonly gatewayUp: Effect.Effect<void>
  /** The next requests matching `method` and `path` get these responses, in order. */
  readonly script: (method: string, path: RegExp, responses: ReadonlyArray<ScriptedResponse>) => Effect.Effect<void>
  // ---- inbound additions: history, threads, attachments, slash commands ----
  /** Every message created so far in a channel, oldest first (what GET /channels/{id}/messages lists). */
  readonly history: (channelId: string) => ReadonlyArray<{ readonly id: string; readonly content: string }>
  /** A public thread under `parentId`, announced with THREAD_CREATE, listed in every later GUILD_CREATE; returns its id. */
  readonly createThread: (parentId: string, options?: { readonly announce?: boolean }) => Effect.Effect<string>
  /** A file served at a loopback URL, for a message's attachments. */
  readonly attachment: (filename: string, contentType: string | undefined, body: Buffer | string) => FakeAttachment
  /**
   * A file whose download hangs: the request is logged when it arrives, and
   * answered only once `release` runs (a CDN that never answers, until it does).
   */
  readonly stalledAttachment: (
    filename: string,
    contentType: string | undefined,
    body: Buffer | string
  ) => { readonly attachment: FakeAttachment; readonly release: Effect.Effect<void> }
  /** Dispatches an INTERACTION_CREATE for a slash command; returns its id and token. */
  readonly interactionCreate: (fields: InteractionFields) => Effect.Effect<{ readonly id: string; readonly token: string }>

  // ---- Outbound (replies): refusals per channel, nonces, references, interaction webhooks ----
  /**
   * Every message POST to `channel` gets `status` (403, 404, 502…) until set
   * back to undefined; with `after`, only once that many more were accepted.
   */
  readonly refuseChannel: (channel: string, status: number | undefined, after?: number) => Effect.Effect<void>
  /** The next `count` messages posted to `channel` are created, but answered 502, as if Discord's answer were lost. */
  readonly loseAnswers: (channel: string, count: number) => Effect.Effect<void>
  /** Messages created (channel posts and webhook follow-ups), a repeated nonce counted once, as Discord does. */
  readonly created: () => ReadonlyArray<CreatedMessage>
  /** The message is gone: a reply referencing it with `fail_if_not_exists` not false gets 400 Unknown Message. */
  readonly deleteMessage: (id: string) => Effect.Effect<void>
  /** Forgets every nonce seen so far, as Discord does after a few minutes: a post repeating one is a new message. */
  readonly forgetNonces: Effect.Effect<void>
}

export interface CreatedMessage {
  readonly id: string
  readonly channelId: string
  readonly content: string
  readonly nonce?: string
  /** The message it replies to (message_reference). */
  readonly reference?: string
  /** How it was made: a channel post, the edit of an interaction's original response, or a follow-up. */
  readonly via: "channel" | "edit-original" | "follow-up"
  readonly interactionToken?: string
}

interface Session {
  readonly id: string
  seq: number
  readonly events: Array<{ readonly t: string; readonly s: number; readonly d: unknown }>
}

interface Connection {
  readonly id: number
  readonly socket: WebSocket
  session: Session | undefined
}

const listen = (server: Http.Server, port: number) =>
  Effect.callback<number>((resume) => {
    server.listen(port, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
  })

const closeServer = (server: Http.Server) =>
  Effect.callback<void>((resume) => {
    server.close(() => resume(Effect.void))
    server.closeAllConnections()
  })

/** The fields of a plain text message in a channel, as Discord sends them, beyond id, channel, author and content. */
const plainMessageFields = () => ({
  timestamp: new Date().toISOString(),
  edited_timestamp: null,
  tts: false,
  mention_everyone: false,
  mentions: [],
  mention_roles: [],
  attachments: [],
  embeds: [],
  pinned: false,
  type: 0
})

export const make = (options: FakeDiscordOptions): Effect.Effect<FakeDiscord, never, Scope.Scope> =>
  Effect.gen(function*() {
    const restLog: Array<RestRecord> = []
    const gatewayLog: Array<GatewayRecord> = []
    const watchers = new Set<() => void>()
    const notify = () => watchers.forEach((check) => check())
    const recordGateway = (record: GatewayRecord) => {
      gatewayLog.push(record)
      notify()
    }
    const scripts: Array<{ method: string; path: RegExp; responses: Array<ScriptedResponse> }> = []
    const sessions = new Map<string, Session>()
    const connections = new Set<Connection>()
    let live: Connection | undefined
    let nextConnection = 1
    // Snowflakes of the real present, as Discord makes them: catch-up bounds its window by their time.
    let nextSnowflake = BigInt(Date.now() - 1_420_070_400_000) << 22n

    const botUser = { id: options.botUserId, username: "planckclaw", discriminator: "0", global_name: null, avatar: null, bot: true }
    const channel = (id: string) => ({
      id,
      type: 0,
      guild_id: options.guildId,
      name: `channel-${id}`,
      position: 0,
      permission_overwrites: [],
      nsfw: false,
      parent_id: null
    })

    // ---- inbound additions: message history, threads, attachments, commands ----
    const hidden = new Set(options.hiddenChannelIds ?? [])
    const stored = new Map<string, Array<Record<string, unknown> & { id: string; content?: unknown }>>()
    const threads = new Map<string, string>()
    const files = new Map<string, { contentType: string | undefined; body: Buffer; held?: Array<() => void> }>()
    const directChannels = new Set<string>()
    const remember = (message: Record<string, unknown> & { id: string; channel_id: string }) => {
      const list = stored.get(message.channel_id) ?? []
      list.push(message)
      stored.set(message.channel_id, list)
    }
    const channelInfo = (id: string) => {
      const last = stored.get(id)?.at(-1)?.id ?? null
      if (options.channelIds.includes(id)) return { ...channel(id), last_message_id: last }
      const parent = threads.get(id)
      if (parent !== undefined) {
        return { id, type: 11, guild_id: options.guildId, parent_id: parent, name: `thread-${id}`, last_message_id: last }
      }
      if (directChannels.has(id)) return { id, type: 1, last_message_id: last, recipients: [] }
      if (options.categoryIds?.includes(id) === true) return { ...channel(id), type: 4, name: `category-${id}` }
      return undefined
    }
    const inboundRoute = (
      method: string,
      path: string,
      query: URLSearchParams,
      body: unknown,
      reply: (status: number, payload?: unknown) => void
    ): boolean => {
      const history = /^\/api\/v10\/channels\/(\d+)\/messages$/.exec(path)
      if (method === "GET" && history !== null) {
        if (hidden.has(history[1]!)) return reply(403, { message: "Missing Access", code: 50001 }), true
        const after = query.get("after")
        const before = query.get("before")
        const limit = Math.min(100, Number(query.get("limit") ?? "50"))
        const all = stored.get(history[1]!) ?? []
        // As Discord: `after`, the oldest messages after it; else the newest (before `before`, if given).
        const page = after !== null
          ? all.filter((message) => BigInt(message.id) > BigInt(after)).slice(0, limit)
          : all.filter((message) => before === null || BigInt(message.id) < BigInt(before)).slice(-limit)
        // Discord lists newest first.
        return reply(200, [...page].reverse()), true
      }
      const lookup = /^\/api\/v10\/channels\/(\d+)$/.exec(path)
      if (method === "GET" && lookup !== null) {
        if (hidden.has(lookup[1]!)) return reply(403, { message: "Missing Access", code: 50001 }), true
        const info = channelInfo(lookup[1]!)
        return reply(info === undefined ? 404 : 200, info ?? { message: "Unknown Channel", code: 10003 }), true
      }
      const commands = /^\/api\/v10\/applications\/(\d+)\/guilds\/(\d+)\/commands$/.exec(path)
      if (method === "PUT" && commands !== null) {
        const list = Array.isArray(body) ? body : []
        return reply(200, list.map((command) => ({ ...command, id: String(nextSnowflake++), application_id: commands[1] }))), true
      }
      return false
    }

    // ---- Outbound: replies the bot posts ----
    type Reply = (status: number, payload?: unknown) => void
    const refusals = new Map<string, { readonly status: number; allow: number }>()
    const lostAnswers = new Map<string, number>()
    const createdLog: Array<CreatedMessage> = []
    // Messages before this index have had their nonces forgotten.
    let noncesFrom = 0
    const deleted = new Set<string>()
    const originals = new Map<string, CreatedMessage>()
    const messageObject = (message: CreatedMessage) => ({
      id: message.id,
      channel_id: message.channelId,
      author: botUser,
      content: message.content,
      ...plainMessageFields()
    })
    const outbound = {
      post: (channelId: string, body: unknown, reply: Reply) => {
        const refusal = refusals.get(channelId)
        if (refusal !== undefined && refusal.allow > 0) refusal.allow--
        else if (refusal !== undefined) {
          return reply(refusal.status, { message: refusal.status === 403 ? "Missing Permissions" : "failure", code: 0 })
        }
        const fields = (body ?? {}) as {
          content?: string
          nonce?: string
          enforce_nonce?: boolean
          message_reference?: { message_id?: string; fail_if_not_exists?: boolean }
        }
        const reference = fields.message_reference
        if (reference?.message_id !== undefined && deleted.has(reference.message_id) && reference.fail_if_not_exists !== false) {
          return reply(400, { message: "Invalid Form Body", code: 50035 })
        }
        const earlier = fields.enforce_nonce === true && fields.nonce !== undefined
          ? createdLog.slice(noncesFrom).find((message) => message.channelId === channelId && message.nonce === fields.nonce)
          : undefined
        if (earlier !== undefined) return reply(200, messageObject(earlier))
        const message: CreatedMessage = {
          id: String(nextSnowflake++),
          channelId,
          content: fields.content ?? "",
          via: "channel",
          ...(fields.nonce === undefined ? {} : { nonce: fields.nonce }),
          ...(reference?.message_id === undefined ? {} : { reference: reference.message_id })
        }
        createdLog.push(message)
        remember(messageObject(message))
        const lost = lostAnswers.get(channelId) ?? 0
        if (lost > 0) {
          lostAnswers.set(channelId, lost - 1)
          return reply(502, { message: "Bad Gateway", code: 0 })
        }
        return reply(200, messageObject(message))
      },
      webhook: (method: string, token: string, original: boolean, body: unknown, reply: Reply) => {
        const content = (body as { content?: string } | undefined)?.content ?? ""
        if (method === "PATCH" && original) {
          const message: CreatedMessage = {
            id: originals.get(token)?.id ?? String(nextSnowflake++),
            channelId: "",
            content,
            via: "edit-original",
            interactionToken: token
          }
          originals.set(token, message)
          createdLog.push(message)
          return reply(200, messageObject(message))
        }
        if (method === "POST" && !original) {
          const message: CreatedMessage = { id: String(nextSnowflake++), channelId: "", content, via: "follow-up", interactionToken: token }
          createdLog.push(message)
          return reply(200, messageObject(message))
        }
        return reply(405, { message: "405: Method Not Allowed", code: 0 })
      }
    }

    // ---- REST ----
    const restServer = Http.createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        const body: unknown = text === "" ? undefined : JSON.parse(text)
        const method = request.method ?? "GET"
        const path = (request.url ?? "").replace(/\?.*$/, "")
        const reply = (status: number, payload?: unknown, headers: Record<string, string> = {}) => {
          restLog.push({ method, path, authorization: request.headers.authorization, body, status, at: Date.now() })
          // No body, no JSON content type: discord.js would try to parse an empty body.
          response.writeHead(status, { ...(payload === undefined ? {} : { "content-type": "application/json" }), ...headers })
          response.end(payload === undefined ? undefined : JSON.stringify(payload))
          notify()
        }
        const query = new URL(request.url ?? "/", "http://fake").searchParams
        const file = /^\/attachments\/(\d+)\/[^/]+$/.exec(path)
        if (method === "GET" && file !== null && files.has(file[1]!)) {
          restLog.push({ method, path, authorization: request.headers.authorization, body, status: 200, at: Date.now() })
          const served = files.get(file[1]!)!
          const answer = () => {
            response.writeHead(200, { "content-type": served.contentType ?? "application/octet-stream" })
            response.end(served.body)
          }
          if (served.held !== undefined) served.held.push(answer)
          else answer()
          return notify()
        }
        const scripted = scripts.find((script) =>
          script.method === method && script.path.test(path) && script.responses.length > 0
        )
        const next = scripted?.responses.shift()
        if (next !== undefined) return reply(next.status, next.body, next.headers)
        // Interaction callbacks carry their token in the path, not in Authorization.
        if (method === "POST" && /^\/api\/v10\/interactions\/\d+\/[^/]+\/callback$/.test(path)) return reply(204)
        // Interaction webhooks are authorized by their token, in the path.
        const webhook = /^\/api\/v10\/webhooks\/(\d+)\/([^/]+)(\/messages\/@original)?$/.exec(path)
        if (webhook !== null) return outbound.webhook(method, decodeURIComponent(webhook[2]!), webhook[3] !== undefined, body, reply)
        if (request.headers.authorization !== `Bot ${options.token}`) {
          return reply(401, { message: "401: Unauthorized", code: 0 })
        }
        if (method === "GET" && path === "/api/v10/gateway/bot") {
          return reply(200, {
            url: gatewayUrl,
            shards: 1,
            session_start_limit: { total: 1000, remaining: 999, reset_after: 86_400_000, max_concurrency: 1 }
          })
        }
        if (method === "GET" && path === "/api/v10/users/@me") return reply(200, botUser)
        if (method === "GET" && path === "/api/v10/applications/@me") {
          return reply(200, { id: options.botUserId, name: "planckclaw", flags: options.applicationFlags ?? 1 << 19 })
        }
        // GET /channels/{id} is the inbound route's: it says the channel's last message, as Discord does.
        const typing = /^\/api\/v10\/channels\/(\d+)\/typing$/.exec(path)
        if (method === "POST" && typing !== null) return reply(204)
        const messages = /^\/api\/v10\/channels\/(\d+)\/messages$/.exec(path)
        if (method === "POST" && messages !== null) return outbound.post(messages[1]!, body, reply)
        if (inboundRoute(method, path, query, body, reply)) return
        return reply(404, { message: "404: Not Found", code: 0 })
      })
    })
    const restPort = yield* Effect.acquireRelease(listen(restServer, 0), () => closeServer(restServer))

    // ---- Gateway ----
    const send = (connection: Connection, payload: { op: number; d: unknown; t?: string | null; s?: number | null }) => {
      if (connection.socket.readyState !== connection.socket.OPEN) return
      connection.socket.send(JSON.stringify({ t: null, s: null, ...payload }))
      recordGateway({ connection: connection.id, event: "sent", ...payload })
    }
    const dispatchOn = (session: Session, t: string, d: unknown) => {
      const s = ++session.seq
      session.events.push({ t, s, d })
      if (live?.session === session) send(live, { op: 0, t, s, d })
    }
    const guild = {
      id: options.guildId,
      name: "Fake guild",
      icon: null,
      owner_id: "1",
      unavailable: false,
      member_count: 2,
      large: false,
      features: [],
      roles: [{ id: options.guildId, name: "@everyone", permissions: "3072", position: 0, color: 0, hoist: false, managed: false, mentionable: false }],
      emojis: [],
      stickers: [],
      channels: options.channelIds.map(channel),
      threads: [],
      members: [],
      presences: [],
      voice_states: [],
      stage_instances: [],
      guild_scheduled_events: [],
      joined_at: new Date(0).toISOString()
    }

    const onFrame = (connection: Connection, payload: { op: number; d: any }) => {
      recordGateway({ connection: connection.id, event: "received", op: payload.op, d: payload.d })
      switch (payload.op) {
        case 1:
          return send(connection, { op: 11, d: null })
        case 2: {
          if (payload.d?.token !== options.token) return closeFromServer(connection, 4004)
          if (options.identifyCloseCode !== undefined) return closeFromServer(connection, options.identifyCloseCode)
          const session: Session = { id: `session-${sessions.size + 1}`, seq: 0, events: [] }
          sessions.set(session.id, session)
          connection.session = session
          live = connection
          dispatchOn(session, "READY", {
            v: 10,
            user: botUser,
            guilds: [{ id: options.guildId, unavailable: true }],
            session_id: session.id,
            resume_gateway_url: gatewayUrl,
            shard: [0, 1],
            application: { id: options.botUserId, flags: 0 }
          })
          // With the server's active threads, as Discord lists them at the start of a session.
          const activeThreads = [...threads.keys()].flatMap((id) => channelInfo(id) ?? [])
          return dispatchOn(session, "GUILD_CREATE", { ...guild, threads: activeThreads })
        }
        case 6: {
          const session = sessions.get(payload.d?.session_id)
          if (session === undefined || payload.d?.token !== options.token || payload.d?.seq > session.seq) {
            return send(connection, { op: 9, d: false })
          }
          connection.session = session
          live = connection
          for (const event of session.events.filter((event) => event.s > payload.d.seq)) {
            send(connection, { op: 0, t: event.t, s: event.s, d: event.d })
          }
          return dispatchOn(session, "RESUMED", {})
        }
      }
    }

    const closeFromServer = (connection: Connection, code: number) => {
      recordGateway({ connection: connection.id, event: "closed", code, by: "server" })
      if (live === connection) live = undefined
      connection.socket.close(code)
    }

    const sockets = new WebSocketServer({ noServer: true })
    const gatewayServer = Http.createServer((_, response) => {
      response.writeHead(426)
      response.end()
    })
    gatewayServer.on("upgrade", (request, socket, head) => {
      sockets.handleUpgrade(request, socket, head, (socket) => {
        const connection: Connection = { id: nextConnection++, socket, session: undefined }
        connections.add(connection)
        recordGateway({ connection: connection.id, event: "opened" })
        socket.on("message", (data) => onFrame(connection, JSON.parse(String(data))))
        socket.on("close", (code) => {
          connections.delete(connection)
          if (live === connection) live = undefined
          if (!gatewayLog.some((r) => r.connection === connection.id && r.event === "closed")) {
            recordGateway({ connection: connection.id, event: "closed", code, by: "client" })
          }
        })
        socket.on("error", () => undefined)
        send(connection, { op: 10, d: { heartbeat_interval: 41_250 } })
      })
    })
    const gatewayPort = yield* Effect.acquireRelease(listen(gatewayServer, 0), () =>
      Effect.sync(() => connections.forEach((connection) => connection.socket.terminate())).pipe(
        Effect.andThen(gatewayServer.listening ? closeServer(gatewayServer) : Effect.void)
      ))
    const gatewayUrl = `ws://127.0.0.1:${gatewayPort}`

    const liveSession = () => live?.session ?? [...sessions.values()].at(-1)

    const serveFile = (filename: string, contentType: string | undefined, body: Buffer | string) => {
      const id = String(nextSnowflake++)
      const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body
      const file: { contentType: string | undefined; body: Buffer; held?: Array<() => void> } = { contentType, body: bytes }
      files.set(id, file)
      const attachment: FakeAttachment = {
        id,
        filename,
        size: bytes.length,
        url: `http://127.0.0.1:${restPort}/attachments/${id}/${filename}`,
        ...(contentType === undefined ? {} : { content_type: contentType })
      }
      return { attachment, file }
    }

    return {
      apiUrl: `http://127.0.0.1:${restPort}/api`,
      token: options.token,
      channelIds: options.channelIds,
      gatewayUrl,
      rest: () => [...restLog],
      gateway: () => [...gatewayLog],
      waitFor: <A>(find: () => A | undefined) =>
        Effect.callback<A>((resume) => {
          // A change seen while the fake is still handling what caused it (its own state half-updated) wakes the
          // waiter once that handler has finished: Effect 4 would run the waiting fiber right here otherwise.
          let registered = false
          const check = () => {
            const found = find()
            if (found === undefined) return
            watchers.delete(check)
            if (registered) queueMicrotask(() => resume(Effect.succeed(found)))
            else resume(Effect.succeed(found))
          }
          watchers.add(check)
          check()
          registered = true
          return Effect.sync(() => watchers.delete(check))
        }),
      dispatch: (t, d) =>
        Effect.sync(() => {
          const session = liveSession()
          if (session !== undefined) dispatchOn(session, t, d)
        }),
      messageCreate: (fields) =>
        Effect.sync(() => {
          const id = String(nextSnowflake++)
          const message = {
            id,
            channel_id: fields.channelId,
            ...(fields.webhook === true ? { webhook_id: fields.authorId } : {}),
            author: {
              id: fields.authorId,
              username: `user-${fields.authorId}`,
              discriminator: "0",
              global_name: fields.globalName ?? null,
              avatar: null,
              ...(fields.bot === true ? { bot: true } : {})
            },
            content: fields.content,
            ...plainMessageFields(),
            attachments: fields.attachments ?? [],
            ...(fields.forwarded === undefined ? {} : {
              message_reference: { type: 1, channel_id: fields.channelId, message_id: String(nextSnowflake++) },
              message_snapshots: [{
                message: { ...plainMessageFields(), content: fields.forwarded.content, attachments: fields.forwarded.attachments ?? [] }
              }]
            })
          }
          // REST history has no guild_id nor member, as in Discord.
          remember(message)
          if (fields.direct === true) directChannels.add(fields.channelId)
          const session = liveSession()
          if (session === undefined || fields.dispatch === false) return id
          dispatchOn(session, "MESSAGE_CREATE", {
            ...message,
            ...(fields.direct === true ? {} : { guild_id: options.guildId }),
            ...(fields.direct === true || fields.nick === undefined ? {} : { member: { nick: fields.nick, roles: [] } })
          })
          return id
        }),
      closeGateway: (code) =>
        Effect.sync(() => {
          if (live !== undefined) closeFromServer(live, code)
        }),
      invalidateSession: (resumable) =>
        Effect.sync(() => {
          if (live !== undefined) send(live, { op: 9, d: resumable })
        }),
      gatewayDown: Effect.suspend(() => {
        connections.forEach((connection) => connection.socket.terminate())
        live = undefined
        return gatewayServer.listening ? closeServer(gatewayServer) : Effect.void
      }),
      gatewayUp: Effect.suspend(() => gatewayServer.listening ? Effect.void : listen(gatewayServer, gatewayPort)).pipe(
        Effect.asVoid
      ),
      script: (method, path, responses) => Effect.sync(() => void scripts.push({ method, path, responses: [...responses] })),
      history: (channelId) =>
        (stored.get(channelId) ?? []).map((message) => ({ id: message.id, content: String(message.content ?? "") })),
      createThread: (parentId, threadOptions) =>
        Effect.sync(() => {
          const id = String(nextSnowflake++)
          threads.set(id, parentId)
          const session = liveSession()
          if (session !== undefined && threadOptions?.announce !== false) {
            dispatchOn(session, "THREAD_CREATE", { ...channelInfo(id), newly_created: true })
          }
          return id
        }),
      attachment: (filename, contentType, body) => serveFile(filename, contentType, body).attachment,
      stalledAttachment: (filename, contentType, body) => {
        const held: Array<() => void> = []
        const { attachment, file } = serveFile(filename, contentType, body)
        file.held = held
        return {
          attachment,
          release: Effect.sync(() => {
            delete file.held
            for (const answer of held.splice(0)) answer()
          })
        }
      },
      interactionCreate: (fields) =>
        Effect.sync(() => {
          const id = String(nextSnowflake++)
          const token = `interaction-token-${id}`
          const user = { id: fields.userId, username: `user-${fields.userId}`, discriminator: "0", global_name: null, avatar: null }
          const session = liveSession()
          if (session !== undefined) {
            dispatchOn(session, "INTERACTION_CREATE", {
              id,
              application_id: options.botUserId,
              type: 2,
              token,
              version: 1,
              channel_id: fields.channelId,
              channel: { id: fields.channelId, type: fields.direct === true ? 1 : 0 },
              ...(fields.direct === true
                ? { user }
                : { guild_id: options.guildId, member: { user, nick: fields.nick ?? null, roles: [] } }),
              data: { id: "1", name: fields.name, type: 1, options: fields.options ?? [] }
            })
          }
          return { id, token }
        }),
      refuseChannel: (channel, status, after = 0) =>
        Effect.sync(() =>
          void (status === undefined ? refusals.delete(channel) : refusals.set(channel, { status, allow: after }))
        ),
      loseAnswers: (channel, count) => Effect.sync(() => void lostAnswers.set(channel, count)),
      created: () => [...createdLog],
      deleteMessage: (id) => Effect.sync(() => void deleted.add(id)),
      forgetNonces: Effect.sync(() => void (noncesFrom = createdLog.length))
    }
  })
