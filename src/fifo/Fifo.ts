/**
 * The runtime directory with its six named pipes, and non-blocking FIFO
 * ends for both sides of the wire.
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
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { heldBy } from "../memory/FileLock.js"
import { type Frame, type FrameTooLarge, framed, makeBlockFramer } from "../Wire.js"

export class FifoError extends Data.TaggedError("FifoError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** Where the six pipes live. `runDir` holds them and the pid file. */
export interface FifoPaths {
  readonly runDir: string
  readonly interactIn: string
  readonly interactOut: string
  readonly brainIn: string
  readonly brainOut: string
  readonly clawIn: string
  readonly clawOut: string
}

export const fifoNames = {
  interactIn: "interact_in",
  interactOut: "interact_out",
  brainIn: "brain_in",
  brainOut: "brain_out",
  clawIn: "claw_in",
  clawOut: "claw_out"
} as const

type FifoKey = keyof typeof fifoNames
const fifoKeys = Object.keys(fifoNames) as ReadonlyArray<FifoKey>

export const pidFileName = "planckclaw.pid"
export const defaultRunDir = "/tmp/planckclaw"

export const fifoPaths = (runDir: string): FifoPaths => {
  const dir = path.resolve(runDir)
  return {
    runDir: dir,
    interactIn: path.join(dir, fifoNames.interactIn),
    interactOut: path.join(dir, fifoNames.interactOut),
    brainIn: path.join(dir, fifoNames.brainIn),
    brainOut: path.join(dir, fifoNames.brainOut),
    clawIn: path.join(dir, fifoNames.clawIn),
    clawOut: path.join(dir, fifoNames.clawOut)
  }
}

/** The variables an external bridge receives, and a bridge process reads back. */
export const fifoEnvNames = {
  runDir: "PLANCKCLAW_RUN_DIR",
  interactIn: "PLANCKCLAW_INTERACT_IN",
  interactOut: "PLANCKCLAW_INTERACT_OUT",
  brainIn: "PLANCKCLAW_BRAIN_IN",
  brainOut: "PLANCKCLAW_BRAIN_OUT",
  clawIn: "PLANCKCLAW_CLAW_IN",
  clawOut: "PLANCKCLAW_CLAW_OUT"
} as const

/**
 * `PLANCKCLAW_RUN_DIR` (default `/tmp/planckclaw`) gives all six paths; each
 * `PLANCKCLAW_<PIPE>` overrides one, as an external bridge receives them.
 */
export const fifoPathsConfig: Config.Config<FifoPaths> = Config.all({
  runDir: Config.string(fifoEnvNames.runDir).pipe(Config.withDefault(defaultRunDir)),
  overrides: Config.all(
    Object.fromEntries(fifoKeys.map((key) => [key, Config.option(Config.string(fifoEnvNames[key]))])) as {
      [K in FifoKey]: Config.Config<Option.Option<string>>
    }
  )
}).pipe(
  Config.map(({ overrides, runDir }) => {
    const defaults = fifoPaths(runDir)
    return {
      ...defaults,
      ...Object.fromEntries(fifoKeys.map((key) => [key, Option.getOrElse(overrides[key], () => defaults[key])]))
    } as FifoPaths
  })
)

// ---------------------------------------------------------------------------
// Runtime directory

const errnoCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const attempt = <A>(what: string, run: () => Promise<A>): Effect.Effect<A, FifoError> =>
  Effect.tryPromise({ try: run, catch: (cause) => new FifoError({ message: `${what}: ${describe(cause)}`, cause }) })

const ignoringMissing = <A>(effect: Effect.Effect<A, FifoError>): Effect.Effect<void, FifoError> =>
  Effect.asVoid(effect).pipe(
    Effect.catchIf((error) => errnoCode(error.cause) === "ENOENT", () => Effect.void)
  )

/** Creates the directory (0700) or makes sure an existing one is a real directory of ours, then closes it to others. */
const secureDirectory = (dir: string): Effect.Effect<boolean, FifoError> =>
  Effect.gen(function*() {
    const isLink = yield* attempt(`cannot inspect runtime directory ${dir}`, () => fs.promises.lstat(dir)).pipe(
      Effect.map((stat) => stat.isSymbolicLink()),
      Effect.catchIf((error) => errnoCode(error.cause) === "ENOENT", () => Effect.succeed(false))
    )
    if (isLink) {
      return yield* new FifoError({ message: `runtime directory ${dir} is a symbolic link; refusing to use it` })
    }
    const created = yield* attempt(`cannot create runtime directory ${dir}`, () =>
      fs.promises.mkdir(dir, { recursive: true, mode: 0o700 }))
    // O_NOFOLLOW + fstat/fchmod on one descriptor: nothing can be swapped in between.
    const handle = yield* attempt(`cannot open runtime directory ${dir}`, () =>
      fs.promises.open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW)).pipe(
        Effect.mapError((error) => {
          const code = errnoCode(error.cause)
          if (code === "ELOOP" || code === "ENOTDIR") return new FifoError({ message: `runtime directory ${dir} is not a directory` })
          return error
        })
      )
    yield* Effect.gen(function*() {
      const stat = yield* attempt(`cannot inspect runtime directory ${dir}`, () => handle.stat())
      const uid = process.getuid?.()
      if (uid !== undefined && stat.uid !== uid) {
        return yield* new FifoError({
          message: `runtime directory ${dir} is owned by uid ${stat.uid}, not by this user (uid ${uid}); refusing to use it`
        })
      }
      if ((stat.mode & 0o777) !== 0o700) {
        yield* attempt(`cannot restrict runtime directory ${dir} to mode 0700`, () => handle.chmod(0o700))
      }
    }).pipe(Effect.ensuring(Effect.ignore(attempt("close", () => handle.close()))))
    return created !== undefined
  })

const readPid = (pidFile: string): Effect.Effect<number | undefined, FifoError> =>
  attempt(`cannot read ${pidFile}`, () => fs.promises.readFile(pidFile, "utf8")).pipe(
    Effect.map((text) => {
      const pid = Number(text.trim())
      return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
    }),
    Effect.catchIf((error) => errnoCode(error.cause) === "ENOENT", () => Effect.succeed(undefined))
  )

/** Writes our pid with O_EXCL; a pid file left by a dead run is removed first, a live one refuses. */
const claimPidFile = (dir: string): Effect.Effect<string, FifoError> => {
  const pidFile = path.join(dir, pidFileName)
  const claim = (attemptsLeft: number): Effect.Effect<string, FifoError> =>
    attempt(`cannot write ${pidFile}`, () =>
      fs.promises.writeFile(pidFile, `${process.pid}\n`, { flag: "wx", mode: 0o600 })).pipe(
        Effect.as(pidFile),
        Effect.catchIf((error) => errnoCode(error.cause) === "EEXIST" && attemptsLeft > 0, () =>
          Effect.gen(function*() {
            const owner = yield* readPid(pidFile)
            // A live pid that started after the file was written was reused (after a reboot, pids start over).
            if (owner !== undefined && heldBy(owner, pidFile)) {
              return yield* new FifoError({
                message: `runtime directory ${dir} is in use by a live run (pid ${owner}); ` +
                  `stop it, choose another PLANCKCLAW_RUN_DIR, or remove ${pidFile} if that process is not planckclaw`
              })
            }
            yield* Effect.logWarning(`removing stale run state in ${dir} left by pid ${owner ?? "unknown"}`)
            yield* ignoringMissing(attempt(`cannot remove stale ${pidFile}`, () => fs.promises.unlink(pidFile)))
            return yield* claim(attemptsLeft - 1)
          }))
      )
  return claim(3)
}

const releasePidFile = (pidFile: string): Effect.Effect<void> =>
  readPid(pidFile).pipe(
    Effect.flatMap((owner) =>
      owner === process.pid ? ignoringMissing(attempt(`cannot remove ${pidFile}`, () => fs.promises.unlink(pidFile))) : Effect.void
    ),
    Effect.catchAll((error) => Effect.logWarning(error.message))
  )

const mkfifo = (paths: ReadonlyArray<string>): Effect.Effect<void, FifoError> =>
  Effect.async<void, FifoError>((resume) => {
    const child = execFile("mkfifo", ["-m", "600", "--", ...paths], (error, _stdout, stderr) =>
      resume(
        error === null
          ? Effect.void
          : Effect.fail(new FifoError({ message: `mkfifo failed: ${stderr.trim() || describe(error)}`, cause: error }))
      ))
    return Effect.sync(() => child.kill())
  })

const unlinkAll = (paths: ReadonlyArray<string>): Effect.Effect<void, FifoError> =>
  Effect.forEach(paths, (file) => ignoringMissing(attempt(`cannot remove ${file}`, () => fs.promises.unlink(file))), {
    discard: true
  })

/**
 * Lays out the runtime directory for one run: creates it (0700) or checks
 * it (a real directory, owned by us), claims it with `planckclaw.pid`, and
 * makes the six FIFOs (0600), replacing any left by a dead run. On scope
 * close the FIFOs and the pid file go, and the directory too if we made it.
 * Refuses a symlink, a directory of another user, and one in use by a live run.
 */
export const makeRuntimeDir = (runDir: string): Effect.Effect<FifoPaths, FifoError, Scope.Scope> =>
  Effect.gen(function*() {
    const paths = fifoPaths(runDir)
    const created = yield* secureDirectory(paths.runDir)
    if (created) {
      // Only when empty: whatever else someone put there stays.
      yield* Effect.addFinalizer(() => Effect.ignore(attempt("rmdir", () => fs.promises.rmdir(paths.runDir))))
    }
    yield* Effect.acquireRelease(claimPidFile(paths.runDir), releasePidFile)
    const files = fifoKeys.map((key) => paths[key])
    yield* Effect.acquireRelease(
      unlinkAll(files).pipe(Effect.zipRight(mkfifo(files))),
      () => unlinkAll(files).pipe(Effect.catchAll((error) => Effect.logWarning(error.message)))
    )
    return paths
  })

// ---------------------------------------------------------------------------
// FIFO ends

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
        catch: (cause) => new FifoError({ message: `cannot watch FIFO ${file}: ${describe(cause)}`, cause })
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
      (cause) => new FifoError({ message: `reading ${file} failed: ${describe(cause)}`, cause }),
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
              : Effect.fail(new FifoError({ message: `writing ${file} failed: ${describe(error)}`, cause: error }))
          ))
      })
  }))

// ---------------------------------------------------------------------------
// Request / answer over a FIFO pair

/** No answer came within the time given to one request. */
export class ExchangeTimeout extends Data.TaggedError("ExchangeTimeout")<{
  readonly message: string
}> {}

/** One request at a time on `requestPath`, one blank-line-terminated answer block on `answerPath`. */
export interface Exchange {
  readonly ask: (
    request: string,
    timeout: Duration.DurationInput
  ) => Effect.Effect<string, FrameTooLarge | ExchangeTimeout | FifoError>
}

/**
 * The wire carries no request ids, so answers are matched by order, and
 * requests are serialized. A request that timed out (or was interrupted)
 * still owes an answer: before the next request is written, owed answers are
 * awaited (up to that request's timeout) and discarded, so a late answer is
 * never handed to the wrong request. Answers that nobody asked for are
 * dropped with a warning.
 */
export const makeExchange = (options: {
  readonly requestPath: string
  readonly answerPath: string
  readonly maxAnswerBytes: number
}): Effect.Effect<Exchange, FifoError, Scope.Scope> =>
  Effect.gen(function*() {
    const writer = yield* openWriter(options.requestPath)
    const reader = yield* openReader(options.answerPath)
    const answers = yield* Queue.bounded<Frame>(16)
    const readerFailed = yield* Deferred.make<never, FifoError>()
    yield* reader.chunks.pipe(
      framed(() => makeBlockFramer(options.maxAnswerBytes)),
      Stream.runForEach((answer) => Queue.offer(answers, answer)),
      Effect.catchAll((error) => Deferred.fail(readerFailed, error)),
      Effect.forkScoped
    )
    const nextAnswer = Effect.raceFirst(Queue.take(answers), Deferred.await(readerFailed))
    const owed = yield* Ref.make(0)
    const lock = yield* Effect.makeSemaphore(1)

    const settleOwed = (timeout: Duration.DurationInput) =>
      Effect.gen(function*() {
        for (const _ of yield* Queue.takeAll(answers)) {
          const late = (yield* Ref.get(owed)) > 0
          yield* Ref.update(owed, (n) => Math.max(0, n - 1))
          yield* Effect.logWarning(
            late
              ? `discarded a late answer on ${options.answerPath} to a request that timed out`
              : `discarded an answer on ${options.answerPath} that no request was waiting for`
          )
        }
        while ((yield* Ref.get(owed)) > 0) {
          const late = yield* Effect.timeout(nextAnswer, timeout).pipe(Effect.option)
          if (late._tag === "None") {
            const missing = yield* Ref.getAndSet(owed, 0)
            yield* Effect.logWarning(
              `no answer on ${options.answerPath} to ${missing} request(s) that timed out; assuming they were dropped`
            )
          } else {
            yield* Ref.update(owed, (n) => n - 1)
            yield* Effect.logWarning(`discarded a late answer on ${options.answerPath} to a request that timed out`)
          }
        }
      })

    const ask: Exchange["ask"] = (request, timeout) =>
      lock.withPermits(1)(
        Effect.gen(function*() {
          yield* settleOwed(timeout)
          yield* Ref.update(owed, (n) => n + 1)
          const answer = yield* writer.write(request).pipe(
            Effect.tapError(() => Ref.update(owed, (n) => n - 1)),
            Effect.zipRight(nextAnswer),
            Effect.timeoutFail({
              duration: timeout,
              onTimeout: () => new ExchangeTimeout({ message: `no answer on ${options.answerPath} in time` })
            })
          )
          yield* Ref.update(owed, (n) => n - 1)
          return yield* answer
        })
      )
    return { ask }
  })
