/**
 * Non-blocking FIFO ends for both sides of the wire.
 *
 * A FIFO is opened `O_RDWR | O_NONBLOCK` and wrapped in a `net.Socket`, so
 * reads and writes go through the event loop instead of parking a libuv
 * thread-pool thread in a blocking `open`/`read`. Holding both directions
 * open has two consequences this module relies on: our reader never sees EOF
 * when an external writer closes (writers may open and close per message),
 * and our writer never blocks or fails on open when no reader is there yet
 * (bytes wait in the pipe until one comes). Each end is used in one
 * direction only: a write end's socket never reads, or it would swallow the
 * replies that wait in the pipe for an external reader that reopens it.
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as fs from "node:fs"
import * as net from "node:net"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { describeError } from "../Errors.js"
import { FifoError } from "./FifoPaths.js"

/** Our reading end of a FIFO. */
export interface FifoReader {
  readonly path: string
  /** Bytes as they arrive; never ends while the scope is open. Consume it from one place. */
  readonly chunks: Stream.Stream<Uint8Array, FifoError>
}

/** Our writing end of a FIFO. */
export interface FifoWriter {
  readonly path: string
  /**
   * Queues the bytes and waits until the kernel took all of them, however
   * long a full pipe makes that. Writes go out whole and in call order.
   */
  readonly write: (data: string | Uint8Array) => Effect.Effect<void, FifoError>
  /** The same write for plain-callback code (Exchange): `done` gets the failure, if any. */
  readonly send: (data: string | Uint8Array, done: (error: FifoError | undefined) => void) => void
}

/** What a callback reader is told: each chunk as it arrives, then at most one failure. */
export interface ChunkHandlers {
  readonly onChunk: (chunk: Uint8Array) => void
  /** The socket broke or ended; called once, and no chunk follows. Not called when the scope closes. */
  readonly onFailure: (error: FifoError) => void
}

/** Holds back or lets through the chunks of a callback reader (`listenReader`). */
export interface Valve {
  /** No more chunks until `resume`: bytes wait in the socket's buffer, then in the pipe. */
  readonly pause: () => void
  readonly resume: () => void
}

/** A synchronous Node call as an Effect; its error, with `what` before its message, is the failure. */
const syncCall = <A>(what: string, run: () => A) =>
  Effect.try({
    try: run,
    catch: (cause) => new FifoError({ message: `${what}: ${describeError(cause)}`, cause })
  })

// A raw descriptor rather than a FileHandle: the socket closes it, and a
// FileHandle would try to close it again when garbage collected.
const closeFd = (fd: number) => Effect.async<void>((resume) => fs.close(fd, () => resume(Effect.void)))

const openSocket = (file: string, direction: "read" | "write"): Effect.Effect<net.Socket, FifoError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      // Synchronous: a non-blocking open of a FIFO and an fstat never wait, and
      // the thread pool would cost a start its creation and a trip per call.
      const fd = yield* syncCall(`cannot open FIFO ${file}`, () => fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_NONBLOCK))
      const stat = yield* syncCall(`cannot inspect ${file}`, () => fs.fstatSync(fd)).pipe(Effect.tapError(() => closeFd(fd)))
      if (!stat.isFIFO()) {
        yield* closeFd(fd)
        return yield* new FifoError({ message: `${file} is not a named pipe` })
      }
      return yield* Effect.try({
        // The socket owns the descriptor from here on and closes it when destroyed.
        try: () => {
          const socket = new net.Socket({
            fd,
            readable: direction === "read",
            writable: direction === "write",
            allowHalfOpen: true
          })
          // Errors surface through the read stream or the write callbacks; an
          // 'error' event with no listener would crash the process instead.
          socket.on("error", () => undefined)
          return socket
        },
        catch: (cause) => new FifoError({ message: `cannot watch FIFO ${file}: ${describeError(cause)}`, cause })
      }).pipe(Effect.tapError(() => closeFd(fd)))
    }),
    (socket) =>
      Effect.async<void>((resume) => {
        if (socket.closed) return resume(Effect.void)
        socket.once("close", () => resume(Effect.void))
        socket.destroy()
      })
  )

/** Opens `file` for reading for the life of the scope. */
export const openReader = (file: string): Effect.Effect<FifoReader, FifoError, Scope.Scope> =>
  Effect.map(openSocket(file, "read"), (socket) => ({
    path: file,
    chunks: NodeStream.fromReadable<FifoError, Uint8Array>(
      () => socket,
      (cause) => new FifoError({ message: `reading ${file} failed: ${describeError(cause)}`, cause }),
      { closeOnDone: false }
    ).pipe(
      // We hold a write end too, so the stream only stops when the socket broke.
      // Made only then: an error captures a stack trace, which a start can spare.
      Stream.concat(Stream.failSync(() => new FifoError({ message: `FIFO ${file} closed unexpectedly` })))
    )
  }))

/**
 * Opens `file` for reading for the life of the scope, as plain callbacks:
 * for consumers on the hot path of every turn (Exchange, FifoInteract),
 * where a Stream and its queue cost more than the round trip itself. Same
 * failures as `openReader`'s stream. `paused`: no chunk comes before the
 * valve is first opened.
 */
export const listenReader = (
  file: string,
  handlers: ChunkHandlers,
  options?: { readonly paused?: boolean }
): Effect.Effect<Valve, FifoError, Scope.Scope> =>
  Effect.flatMap(openSocket(file, "read"), (socket) =>
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => {
          let failed = false
          const fail = (error: FifoError) => {
            if (failed) return
            failed = true
            handlers.onFailure(error)
          }
          const onError = (cause: unknown) =>
            fail(new FifoError({ message: `reading ${file} failed: ${describeError(cause)}`, cause }))
          // We hold a write end too, so the socket only ends or closes when it broke.
          const onEnd = () => fail(new FifoError({ message: `FIFO ${file} closed unexpectedly` }))
          // Paused before the data listener is added, which would otherwise start the flow.
          if (options?.paused === true) socket.pause()
          socket.on("data", handlers.onChunk)
          socket.on("error", onError)
          socket.on("end", onEnd)
          socket.on("close", onEnd)
          return () => {
            socket.off("data", handlers.onChunk)
            socket.off("error", onError)
            socket.off("end", onEnd)
            socket.off("close", onEnd)
          }
        }),
        // Released before the socket (acquired after it), so closing the scope is no failure.
        (detach) => Effect.sync(detach)
      ),
      (): Valve => ({ pause: () => void socket.pause(), resume: () => void socket.resume() })
    ))

/** Opens `file` for writing for the life of the scope. */
export const openWriter = (file: string): Effect.Effect<FifoWriter, FifoError, Scope.Scope> =>
  Effect.map(openSocket(file, "write"), (socket) => {
    const send: FifoWriter["send"] = (data, done) => {
      socket.write(data, (error) =>
        done(
          error === undefined || error === null
            ? undefined
            : new FifoError({ message: `writing ${file} failed: ${describeError(error)}`, cause: error })
        ))
    }
    return {
      path: file,
      send,
      write: (data) =>
        Effect.suspend(() => {
          let outcome: Effect.Effect<void, FifoError> | undefined
          let waiting: ((result: Effect.Effect<void, FifoError>) => void) | undefined
          send(data, (error) => {
            if (outcome !== undefined) return
            outcome = error === undefined ? Effect.void : Effect.fail(error)
            waiting?.(outcome)
          })
          // Written whole at once, the usual case for a pipe with room: the
          // kernel has every byte now, and the callback would only come a
          // tick later; done without suspending the fiber. Anything left (a
          // full pipe) waits for the callback.
          if (outcome === undefined && socket.writableLength === 0 && !socket.destroyed) outcome = Effect.void
          return outcome ?? Effect.async<void, FifoError>((resume) => {
            if (outcome !== undefined) return resume(outcome)
            waiting = resume
          })
        })
    }
  })
