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
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { describeError, errnoCode } from "../runtime/Errors.js"
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
  /**
   * Throws away the bytes still queued for the pipe (the rest of a request
   * that a reader which died left the pipe too full to take); their writes
   * fail. Bytes already in the pipe stay there (see `takeUnread`).
   */
  readonly dropQueued: () => Result.Result<void, FifoError>
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

/** A synchronous Node call, its error described with `what` before its message. */
const trySync = <A>(what: string, run: () => A): Result.Result<A, FifoError> =>
  Result.try({ try: run, catch: (cause) => new FifoError({ message: `${what}: ${describeError(cause)}`, cause }) })

const closeQuietly = (fd: number) => void Result.try(() => fs.closeSync(fd))

/**
 * Opens `file` as a FIFO socket used in one direction. Synchronous: a
 * non-blocking open of a FIFO and an fstat never wait, and the thread pool
 * would cost a start its creation and a trip per call.
 */
const fifoSocket = (file: string, direction: "read" | "write"): Result.Result<net.Socket, FifoError> => {
  const opened = trySync(`cannot open FIFO ${file}`, () => fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_NONBLOCK))
  if (Result.isFailure(opened)) return Result.fail(opened.failure)
  const fd = opened.success
  const stat = trySync(`cannot inspect ${file}`, () => fs.fstatSync(fd))
  const socket = Result.flatMap(stat, (stat) =>
    stat.isFIFO()
      // The socket owns the descriptor from here on and closes it when destroyed.
      ? trySync(`cannot watch FIFO ${file}`, () =>
        new net.Socket({ fd, readable: direction === "read", writable: direction === "write", allowHalfOpen: true }))
      : Result.fail(new FifoError({ message: `${file} is not a named pipe` })))
  if (Result.isFailure(socket)) {
    closeQuietly(fd)
    return socket
  }
  // Errors surface through the read stream or the write callbacks; an
  // 'error' event with no listener would crash the process instead.
  socket.success.on("error", () => undefined)
  return socket
}

const destroySocket = (socket: net.Socket) =>
  Effect.callback<void>((resume) => {
    if (socket.closed) return resume(Effect.void)
    socket.once("close", () => resume(Effect.void))
    socket.destroy()
  })

const openSocket = (file: string, direction: "read" | "write"): Effect.Effect<net.Socket, FifoError, Scope.Scope> =>
  Effect.acquireRelease(Effect.suspend(() => Effect.fromResult(fifoSocket(file, direction))), destroySocket)

/**
 * Takes every byte `file` holds unread at this moment, without waiting, on a
 * descriptor of its own. For a far end that died (see Exchange): what it
 * wrote before it died, or what it will never read. Bytes another reader of
 * ours took already are not in the pipe any more; JavaScript runs one thing
 * at a time, so none is taken halfway.
 */
export const takeUnread = (file: string): Result.Result<Uint8Array, FifoError> => {
  const opened = trySync(`cannot open FIFO ${file}`, () => fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK))
  if (Result.isFailure(opened)) return Result.fail(opened.failure)
  const parts: Array<Uint8Array> = []
  let failure: FifoError | undefined
  while (failure === undefined) {
    const buffer = Buffer.allocUnsafe(64 * 1024)
    const read = Result.try({ try: () => fs.readSync(opened.success, buffer), catch: (cause) => cause })
    if (Result.isSuccess(read) && read.success > 0) {
      parts.push(buffer.subarray(0, read.success))
      continue
    }
    // EAGAIN: the pipe is empty (we hold a write end, so it never reads as ended).
    if (Result.isFailure(read) && errnoCode(read.failure) !== "EAGAIN") {
      failure = new FifoError({ message: `reading ${file} failed: ${describeError(read.failure)}`, cause: read.failure })
    }
    break
  }
  closeQuietly(opened.success)
  return failure !== undefined ? Result.fail(failure) : Result.succeed(Buffer.concat(parts))
}

/** Opens `file` for reading for the life of the scope. */
export const openReader = (file: string): Effect.Effect<FifoReader, FifoError, Scope.Scope> =>
  Effect.map(openSocket(file, "read"), (socket) => ({
    path: file,
    chunks: NodeStream.fromReadable<Uint8Array, FifoError>({
      evaluate: () => socket,
      onError: (cause) => new FifoError({ message: `reading ${file} failed: ${describeError(cause)}`, cause }),
      closeOnDone: false
    }).pipe(
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
  Effect.gen(function*() {
    let socket = yield* openSocket(file, "write")
    const first = socket
    // A socket that replaced the first (see dropQueued) is closed with the scope too.
    yield* Effect.addFinalizer(() => socket === first ? Effect.void : destroySocket(socket))
    const send: FifoWriter["send"] = (data, done) => {
      socket.write(data, (error) =>
        done(
          error === undefined || error === null
            ? undefined
            : new FifoError({ message: `writing ${file} failed: ${describeError(error)}`, cause: error })
        ))
    }
    const dropQueued: FifoWriter["dropQueued"] = () => {
      if (socket.writableLength === 0) return Result.succeed(undefined)
      // The fresh descriptor is opened before the old one closes: a FIFO
      // with no descriptor open loses what it holds, and others may read it.
      const fresh = fifoSocket(file, "write")
      if (Result.isFailure(fresh)) return Result.fail(fresh.failure)
      const old = socket
      socket = fresh.success
      old.destroy()
      return Result.succeed(undefined)
    }
    return {
      path: file,
      send,
      dropQueued,
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
          return outcome ?? Effect.callback<void, FifoError>((resume) => {
            if (outcome !== undefined) return resume(outcome)
            waiting = resume
          })
        })
    } satisfies FifoWriter
  })
