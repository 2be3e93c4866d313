/**
 * `planckclaw mcp`'s server: effect/ai's McpServer on this process's
 * standard input and output, with McpHost's tools, until the client closes
 * its input (the stdio protocol then ends the fiber that launched it, with
 * exit code 0). A client that closes its input has gone (MCP's stdio
 * shutdown): the calls still running are stopped then, their claws'
 * sessions killed, not waited for, as nobody is left to read their answers.
 */
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as McpProtocol from "effect/ai/McpProtocol"
import * as McpServer from "effect/ai/McpServer"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import type { Agent } from "../../agent/Agent.js"
import { AgentConfig } from "../../config/AgentConfig.js"
import { packageVersion } from "../../config/PackageRoot.js"
import type { Inbox } from "../../memory/Inbox.js"
import type { ClawsService } from "../../ports/Claws.js"
import * as McpHost from "./McpHost.js"

/** Every revision effect/ai's server speaks over stdio, so older clients connect too. */
const protocols = [McpProtocol.v2025_11_25, McpProtocol.v2025_06_18, McpProtocol.v2025_03_26, McpProtocol.v2024_11_05] as const

/** `stdio`, its input's end said in `clientGone`. */
const tellingEnd = (stdio: Layer.Layer<Stdio.Stdio>, clientGone: Deferred.Deferred<void>) =>
  Layer.effect(
    Stdio.Stdio,
    Effect.map(Effect.service(Stdio.Stdio), (service) => ({ ...service, stdin: service.stdin.pipe(Stream.onEnd(Deferred.succeed(clientGone, undefined))) }))
  ).pipe(Layer.provide(stdio))

/**
 * Serves `claws` and ask_agent (on the agent `agentLayer` builds at the
 * first ask) on `stdio` (this process's) until the client leaves.
 */
export const serve = <E, R>(claws: ClawsService, agentLayer: Layer.Layer<Agent | Inbox, E, R>, stdio: Layer.Layer<Stdio.Stdio> = NodeStdio.layer) =>
  Effect.gen(function*() {
    const agent = yield* McpHost.lazyAgent(agentLayer, yield* Effect.scope)
    const { maxMessageBytes } = yield* AgentConfig
    const clientGone = yield* Deferred.make<void>()
    return yield* Layer.launch(
      McpServer.layerStdio({
        name: "planckclaw",
        version: packageVersion(),
        protocols,
        registrations: McpHost.registrations(claws, agent, maxMessageBytes, Deferred.await(clientGone))
      }).pipe(Layer.provide(tellingEnd(stdio, clientGone)))
    )
  })
