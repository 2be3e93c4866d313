/**
 * A built-in bridge and the agent in one process (Handover): the agent's
 * `send` completes once the bridge has the reply in its keeping (for the
 * Discord bridge, its outbox journal), not when the line enters the pipe;
 * the run's count of delivered replies follows the delivery itself.
 */
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Stream, SubscriptionRef } from "effect"
import * as Handover from "../../src/pipes/Handover.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { serveInteract } from "../../src/pipes/Serve.js"
import type { InteractService, OutboundMessage } from "../../src/ports/Interact.js"
import * as InteractFifo from "../../src/pipes/FifoInteract.js"
import { tempDir } from "../support/FifoKit.js"

const runtime = Effect.flatMap(tempDir, (dir) => makeRuntimeDir(path.join(dir, "run")))

describe("Handover: a reply is the bridge's once it keeps it", () => {
  it.effect("the agent's send waits for the bridge to journal the reply; delivery is counted when it is done", () =>
    Effect.gen(function*() {
      const paths = yield* runtime
      const handover = yield* Handover.make()
      const journaled = yield* Deferred.make<void>()
      const delivered = yield* Deferred.make<void>()
      const asked = yield* Deferred.make<void>()
      const taken: Array<OutboundMessage> = []
      const bridge: InteractService = {
        messages: Stream.never,
        send: () => Effect.die("a bridge with accept is never asked to send"),
        accept: (message) =>
          Deferred.succeed(asked, undefined).pipe(
            Effect.andThen(Deferred.await(journaled)),
            Effect.tap(() => Effect.sync(() => taken.push(message))),
            Effect.as(Deferred.await(delivered))
          )
      }
      yield* Effect.forkScoped(serveInteract(bridge, paths, { handover }))
      const agentSide = yield* InteractFifo.make({ paths, handover })

      const sending = yield* Effect.forkChild(agentSide.send({ channel: "300000000000000001", text: "kept" }))
      // The bridge has read the line but not yet journaled it: the agent must not count it sent.
      yield* Deferred.await(asked)
      yield* Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))
      expect(sending.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(journaled, undefined)
      yield* Fiber.join(sending)
      expect(taken).toEqual([{ channel: "300000000000000001", text: "kept" }])

      // Kept, not yet delivered: the run (repliesDelivered) still waits for it.
      expect(yield* SubscriptionRef.get(handover.kept)).toBe(1)
      expect(yield* SubscriptionRef.get(handover.delivered)).toBe(0)
      yield* Deferred.succeed(delivered, undefined)
      yield* Handover.repliesDelivered(handover)
      expect(yield* SubscriptionRef.get(handover.delivered)).toBe(1)
    }))
})
