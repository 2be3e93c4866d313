/**
 * A client of the interact FIFOs, as an external bridge sees them: raw
 * writes to interact_in, decoded replies from interact_out, and sentinels
 * that mark "everything the killed agent wrote has been read".
 */
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { Effect, Result, Queue, type Scope, Stream } from "effect"
import { framed, makeLineFramer } from "../../src/runtime/Framing.js"
import { decodeInteractLine, encodeInteractLine } from "../../src/pipes/InteractLine.js"
import { openReader } from "../../src/pipes/PipeEnd.js"
import type { InboundMessage } from "../../src/ports/Interact.js"
import * as Pipes from "../support/Pipes.js"
import { BOUND, eventually, WaitTimedOut, within } from "./Bounds.js"
import { diagnosed, type Planckclaw } from "./Processes.js"

/**
 * Waits until an agent reads the interact_in now in `runDir` (a FIFO left by
 * a killed run, or one not opened yet, does not count).
 */
export const listening = (runDir: string) => Pipes.listening(runDir, BOUND)

/** Writes raw bytes to interact_in in one open/write/close, like `printf … > interact_in`. */
export const sendRaw = (runDir: string, bytes: string | Uint8Array) =>
  Effect.gen(function*() {
    const fd = yield* eventually("interact_in to accept a writer", () => Pipes.openInteractIn(runDir))
    yield* Effect.callback<void>((resume) => {
      const socket = new net.Socket({ fd, readable: false, writable: true })
      socket.on("error", (error) => resume(Effect.die(error)))
      socket.end(bytes, () => {
        socket.destroy()
        resume(Effect.void)
      })
    }).pipe(within("a write to interact_in"))
  })

export interface InteractClient {
  /** Sends one message as `{channel}\t{escaped text}\n`. */
  readonly send: (text: string, channel?: string) => Effect.Effect<void, WaitTimedOut>
  readonly sendRaw: (bytes: string | Uint8Array) => Effect.Effect<void, WaitTimedOut>
  /** The next reply line on interact_out, decoded. */
  readonly reply: Effect.Effect<InboundMessage, WaitTimedOut>
  /** Replies read so far but not yet taken. */
  readonly pending: Effect.Effect<Array<InboundMessage>>
}

/**
 * Connects to the agent now serving `runDir`: waits until it reads
 * interact_in, and reads interact_out for the life of the scope.
 */
export const connect = (runDir: string): Effect.Effect<InteractClient, WaitTimedOut, Scope.Scope> =>
  Effect.gen(function*() {
    yield* listening(runDir)
    const reader = yield* openReader(path.join(runDir, "interact_out")).pipe(Effect.orDie)
    const inbox = yield* Queue.unbounded<InboundMessage>()
    yield* reader.chunks.pipe(
      framed(() => makeLineFramer(16 * 1024 * 1024)),
      Stream.runForEach((frame) =>
        Result.match(Result.flatMap(frame, decodeInteractLine), {
          onFailure: (error) => Effect.die(new Error(`unreadable line on interact_out: ${error.message}`)),
          onSuccess: (reply) => Queue.offer(inbox, reply)
        })),
      Effect.ignore,
      Effect.forkScoped
    )
    return {
      send: (text, channel = "cli") =>
        sendRaw(runDir, Result.getOrThrow(encodeInteractLine({ channel, text }))),
      sendRaw: (bytes) => sendRaw(runDir, bytes),
      reply: Queue.take(inbox).pipe(within("a reply on interact_out")),
      pending: Queue.takeAll(inbox).pipe(Effect.map((chunk) => [...chunk]))
    }
  })

export const diagnosedClient = (proc: Planckclaw, client: InteractClient): InteractClient => ({
  send: (text, channel) => diagnosed(proc)(client.send(text, channel)),
  sendRaw: (bytes) => diagnosed(proc)(client.sendRaw(bytes)),
  reply: diagnosed(proc)(client.reply),
  pending: client.pending
})

/**
 * Connects to the interact FIFOs of `proc`, failing at once (with its
 * stderr) if it exits instead of serving them.
 */
export const connectTo = (proc: Planckclaw, runDir: string): Effect.Effect<InteractClient, WaitTimedOut, Scope.Scope> =>
  Effect.raceFirst(
    diagnosed(proc)(connect(runDir)).pipe(Effect.map((raw) => diagnosedClient(proc, raw))),
    proc.ended.pipe(
      Effect.flatMap((end) =>
        new WaitTimedOut({
          message: `planckclaw exited (${JSON.stringify(end)}) instead of serving ${runDir}:\n${proc.stderr().slice(-4000)}`
        })
      )
    )
  )

/**
 * After the agent was killed: writes a sentinel line on interact_out behind
 * whatever the agent had written there. A reader that has read up to the
 * sentinel has read everything, with no waiting on the clock.
 */
export const writeSentinel = (runDir: string) =>
  Effect.sync(() => {
    const fd = fs.openSync(path.join(runDir, "interact_out"), fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)
    fs.writeSync(fd, "sentinel\tdrained\n")
    fs.closeSync(fd)
  })

export const isSentinel = (reply: InboundMessage) => reply.channel === "sentinel"
