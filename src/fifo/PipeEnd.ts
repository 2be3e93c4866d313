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
}

/** A Node callback-style call as an Effect. */
const nodeCall = <A>(what: string, run: (callback: (error: NodeJS.ErrnoException | null, value: A) => void) => void) =>
  Effect.async<A, FifoError>((resume) =>
    run((error, value) =>
      resume(error === null ? Effect.succeed(value) : Effect.fail(new FifoError({ message: `${what}: ${error.message}`, cause: error })))
    )
  )

// A raw descriptor rather than a FileHandle: the socket closes it, and a
// FileHandle would try to close it again when garbage collected.
const closeFd = (fd: number) => Effect.async<void>((resume) => fs.close(fd, () => resume(Effect.void)))

const openSocket = (file: string, direction: "read" | "write"): Effect.Effect<net.Socket, FifoError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const fd = yield* nodeCall<number>(`cannot open FIFO ${file}`, (callback) =>
        fs.open(file, fs.constants.O_RDWR | fs.constants.O_NONBLOCK, callback))
      const stat = yield* nodeCall<fs.Stats>(`cannot inspect ${file}`, (callback) => fs.fstat(fd, callback)).pipe(
        Effect.tapError(() => closeFd(fd))
      )
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
      Stream.concat(Stream.fail(new FifoError({ message: `FIFO ${file} closed unexpectedly` })))
    )
  }))

/** Opens `file` for writing for the life of the scope. */
export const openWriter = (file: string): Effect.Effect<FifoWriter, FifoError, Scope.Scope> =>
  Effect.map(openSocket(file, "write"), (socket) => ({
    path: file,
    write: (data) =>
      Effect.async<void, FifoError>((resume) => {
        socket.write(data, (error) =>
          resume(
            error === undefined || error === null
              ? Effect.void
              : Effect.fail(new FifoError({ message: `writing ${file} failed: ${describeError(error)}`, cause: error }))
          ))
      })
  }))
