/**
 * Which of serve's ask_agent answers (POST /v1/mcp) are errors: those of a
 * turn the agent did not answer (its brain gave up, a message it refused),
 * told by the host's reply, never by the words of a model's answer, as
 * `planckclaw mcp` decides it (test/hosts/mcp/McpHost.test.ts).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as HttpServer from "effect/http/HttpServer"
import { ONLY_CONTROLS } from "../../../src/agent/Agent.js"
import { APOLOGY, misconfiguredReply } from "../../../src/agent/Turn.js"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import * as HttpApi from "../../../src/hosts/serve/HttpApi.js"
import { Brain, BrainError } from "../../../src/ports/Brain.js"
import { hostLayer, lastUserText, settings, tempDir } from "./Kit.js"

/** Says what it is asked to say (`say: ...`); gives up on `break`. */
const brain = Layer.succeed(Brain, {
  complete: (request) => {
    const asked = lastUserText(request)
    return asked === "break"
      ? Effect.fail(new BrainError({ reason: "timeout", detail: "test" }))
      : Effect.succeed(ScriptedBrain.text(asked.replace(/^say: /, "")))
  }
})

const served = Effect.gen(function*() {
  const context = yield* Layer.build(
    HttpApi.layer({ host: "127.0.0.1", port: 0 }).pipe(Layer.provide(hostLayer(tempDir(), brain)), Layer.provide(settings({})))
  )
  const address = Context.get(context, HttpServer.HttpServer).address
  return address._tag === "UnixPathAddress" ? yield* Effect.die("expected a TCP address") : address.port
})

const connect = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "planckclaw-test", version: "1.0.0" })
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/v1/mcp`)))
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

describe("serve's ask_agent over POST /v1/mcp: which answers are errors", () => {
  it.live("an error when the agent did not answer, never because of what a model's reply says", () =>
    Effect.gen(function*() {
      const client = yield* connect(yield* served)
      const ask = (message: string) =>
        Effect.map(Effect.promise(() => client.callTool({ name: "ask_agent", arguments: { agent: "ada", message } })), (result) => ({
          isError: result.isError,
          text: (result.content as Array<{ text: string }>)[0]!.text
        }))
      // The model said the words of a failure: it answered all the same.
      expect(yield* ask(`say: ${APOLOGY}`)).toEqual({ isError: false, text: APOLOGY })
      expect(yield* ask(`say: ${misconfiguredReply("a model's words")}`)).toEqual({ isError: false, text: misconfiguredReply("a model's words") })
      expect(yield* ask(`say: ${ONLY_CONTROLS}`)).toEqual({ isError: false, text: ONLY_CONTROLS })
      // The brain gave up: the same words, now an error; and a message the agent refused.
      expect(yield* ask("break")).toEqual({ isError: true, text: APOLOGY })
      expect(yield* ask("\u0001\u0002")).toEqual({ isError: true, text: ONLY_CONTROLS })
      expect(yield* ask("say: Hello.")).toEqual({ isError: false, text: "Hello." })
    }), 30_000)
})
