/**
 * The gateway hook: discord.js's own sharding strategy, seeing its manager
 * through a view of ours. Through it the adapter paces connection attempts,
 * sees close codes and reads every dispatch first; only the dispatches
 * discord.js needs for its connection state reach it, so message traffic
 * never grows its caches and a malformed message cannot throw inside it.
 */
import {
  type GatewayDispatchPayload,
  type GatewaySendPayload,
  type IShardingStrategy,
  SimpleShardingStrategy,
  type WebSocketOptions,
  WebSocketShardStatus
} from "discord.js"

/** Dispatches discord.js needs to track its connection; everything else stays with the adapter. */
const dispatchesForDiscordJs = new Set(["READY", "RESUMED", "GUILD_CREATE", "GUILD_DELETE"])

/** What the strategy calls as shards connect, become healthy, close and dispatch. */
export interface GatewayHooks {
  /** Resolves when a shard may open a connection (after any backoff). */
  readonly beforeConnect: () => Promise<void>
  /** A shard is READY or RESUMED. */
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

interface ShardEvent {
  readonly data?: GatewayDispatchPayload
  readonly code?: number
}

/** Every shard event passes the hooks first; discord.js gets only what it needs of them. */
const hooksFirst = (hooks: GatewayHooks, emitter: ShardEventEmitter) => (event: string, payload: ShardEvent) => {
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

/** Session info that never comes: a shard given it waits instead of connecting. */
const never = new Promise<never>(() => undefined)

/**
 * discord.js's SimpleShardingStrategy runs the shards; it reaches its manager
 * only for options, gateway information and events. Through this view, a
 * shard opening a connection (it asks for its session first, while idle)
 * waits for our backoff, and every shard event passes us first.
 */
export class PacedShardingStrategy implements IShardingStrategy {
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
    const view = {
      get options() {
        return { ...manager.options, retrieveSessionInfo }
      },
      fetchGatewayInformation: (force?: boolean) => manager.fetchGatewayInformation(force),
      getShardCount: () => manager.getShardCount(),
      emit: hooksFirst(hooks, manager as unknown as ShardEventEmitter)
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
  fetchStatus(): ReturnType<IShardingStrategy["fetchStatus"]> {
    return this.inner.fetchStatus()
  }
}
