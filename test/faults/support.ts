/**
 * The fault campaign's toolkit: a sandbox per test (working, memory, runtime
 * and claws directories), a Messages API stand-in on loopback that can
 * misbehave in every way the suite needs, the built `bin/planckclaw` as a
 * child process, a client for the interact FIFOs that speaks the raw wire,
 * and checks that no process, FIFO or byte was left behind.
 *
 * End-to-end tests run on the real clock; every wait here is bounded, and a
 * wait that runs out fails the test naming what never happened. Nothing is
 * asserted about how long anything took.
 */
import * as Pipes from "../support/Pipes.js"
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { expect } from "@effect/vitest"
import { Deferred, Duration, Effect, Either, Exit, FiberId, Queue, type Scope, Stream } from "effect"
import { openReader } from "../../src/fifo/PipeEnd.js"
import type { InboundMessage } from "../../src/Interact.js"
import { framed, makeLineFramer } from "../../src/fifo/Framing.js"
import { decodeInteractLine, encodeInteractLine } from "../../src/fifo/InteractLine.js"
import * as Cli from "../support/Cli.js"

const REPO = Cli.REPO
export const SHIPPED_CLAWS = path.join(REPO, "claws")
export const APOLOGY = "I'm temporarily unavailable. Please try again shortly."
export const FAKE_KEY = "test-key-not-secret-4f1c"
export const FAKE_TOKEN = "test-token-not-secret-9b2e"

// ---------------------------------------------------------------------------
// Bounded waits

/** Generous: starting Node on a loaded two-core machine takes seconds. A bound, never a measurement. */
export const BOUND = Duration.seconds(60)

export const WaitTimedOut = Pipes.WaitTimedOut
export type WaitTimedOut = Pipes.WaitTimedOut

export const within = (what: string, bound: Duration.DurationInput = BOUND) => Pipes.within(what, bound)

/** Polls `probe` (a throw counts as "not yet") until it returns a value other than undefined. */
export const eventually = <A>(what: string, probe: () => A | undefined, bound: Duration.DurationInput = BOUND) =>
  Pipes.eventually(what, probe, bound)

// ---------------------------------------------------------------------------
// Processes

const procState = Pipes.procState

/** `process.kill(pid, 0)` says ESRCH: not even a zombie is left. */
export const isGone = (pid: number): boolean => {
  const probe = Either.try(() => process.kill(pid, 0))
  return Either.isLeft(probe) && (probe.left as NodeJS.ErrnoException).code === "ESRCH"
}

/** Alive and not a zombie. */
export const isRunning = (pid: number): boolean => !isGone(pid) && procState(pid) !== "Z"

/**
 * Waits until `pid` is gone for good (ESRCH). A zombie counts as still
 * there: PID 1 here reaps orphans only every couple of seconds, hence the
 * polling.
 */
export const gone = (what: string, pid: number) =>
  eventually(`${what} (pid ${pid}) to be gone (ESRCH)`, () => (isGone(pid) ? true : undefined)).pipe(
    Effect.mapError((error) => new WaitTimedOut({ message: `${error.message}; it is still there: ${describeProcess(pid)}` }))
  )

/** The pid a claw or bridge wrote into `file`, once it has. */
export const pidIn = (file: string) =>
  eventually(`a pid in ${path.basename(file)}`, () => {
    const pid = Number.parseInt(fs.readFileSync(file, "utf8"), 10)
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  })

/** Live (non-zombie) processes whose command line or environment mentions `marker`. */
export const processesMentioning = (marker: string): Array<number> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    const pid = Number(entry)
    if (!Number.isSafeInteger(pid) || pid === process.pid || procState(pid) === "Z") return []
    const mentions = (file: string) =>
      Either.getOrElse(Either.try(() => fs.readFileSync(`/proc/${pid}/${file}`, "utf8").includes(marker)), () => false)
    return mentions("cmdline") || mentions("environ") ? [pid] : []
  })

/** Live children of `parent` whose command line contains `marker`. */
export const childrenOf = (parent: number, marker: string): Array<number> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    const pid = Number(entry)
    if (!Number.isSafeInteger(pid)) return []
    const stat = Either.getOrElse(Either.try(() => fs.readFileSync(`/proc/${pid}/stat`, "utf8")), () => "")
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    if (state === undefined || state === "Z" || Number(ppid) !== parent) return []
    const command = Either.getOrElse(Either.try(() => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")), () => "")
    return command.includes(marker) ? [pid] : []
  })

/** The watchdog planckclaw `pid` started (a `/bin/sh -c` reading the groups it must kill). */
export const watchdogOf = (pid: number) =>
  eventually(`planckclaw ${pid}'s watchdog`, () => childrenOf(pid, "groups=")[0])

/** Describes a process for an assertion message: pid, state, parent, command line. */
const describeProcess = (pid: number): string => {
  const stat = Either.getOrElse(Either.try(() => fs.readFileSync(`/proc/${pid}/stat`, "utf8")), () => "")
  const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  const command = Either.getOrElse(Either.try(() => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ")), () => "?")
  return `pid ${pid} state ${state ?? "?"} ppid ${ppid ?? "?"}: ${command}`
}

/**
 * Waits (briefly, polling) until no process started for this sandbox is
 * left, and returns whatever still is: `[]` means no orphan.
 */
export const strays = (box: Sandbox, bound: Duration.DurationInput = Duration.seconds(10)) =>
  eventually("the sandbox's processes to be gone", () => processesMentioning(box.dir).length === 0 ? true : undefined, bound)
    .pipe(
      Effect.as<Array<string>>([]),
      Effect.catchTag("WaitTimedOut", () => Effect.sync(() => processesMentioning(box.dir).map(describeProcess)))
    )

// ---------------------------------------------------------------------------
// Sandbox

export interface Sandbox {
  readonly dir: string
  /** PLANCKCLAW_DIR (not created: the agent creates it). */
  readonly memory: string
  /** PLANCKCLAW_RUN_DIR (not created: `planckclaw run` lays it out). */
  readonly runDir: string
  /** CLAWS_DIR: empty unless the test writes claws or points CLAWS_DIR at the shipped ones. */
  readonly claws: string
  readonly env: (settings?: Record<string, string>) => NodeJS.ProcessEnv
  readonly file: (name: string) => string
  /** A memory file, `undefined` when absent. */
  readonly memoryFile: (name: string) => string | undefined
  /** Writes a memory file (creating the memory directory). */
  readonly writeMemory: (name: string, content: string | Buffer) => void
  /** Writes an executable claw `CLAWS_DIR/name`: `#!/bin/sh`, `D=<sandbox>`, then `body`. */
  readonly claw: (name: string, body: string) => string
  /** Writes an executable script anywhere in the sandbox, same preamble. */
  readonly script: (name: string, body: string) => string
}

export const tool = (name: string, description = `${name} tool`) =>
  `#TOOLS:${JSON.stringify({ name, description, input_schema: { type: "object", properties: {} } })}`

export const sandbox = (settings: Record<string, string> = {}): Effect.Effect<Sandbox, never, Scope.Scope> =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-fault-")))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    // A safety net for a failed test: whatever still runs for this sandbox goes.
    // Passing tests leave nothing to kill (they assert it).
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const pid of processesMentioning(dir)) Either.try(() => process.kill(pid, "SIGKILL"))
      })
    )
    const file = (name: string) => path.join(dir, name)
    const memory = file("memory")
    const claws = file("claws")
    fs.mkdirSync(claws)
    const writeScript = (target: string, body: string) => {
      fs.mkdirSync(path.dirname(target), { recursive: true })
      fs.writeFileSync(target, `#!/bin/sh\nD='${dir}'\n${body}`, { mode: 0o755 })
      return target
    }
    return {
      dir,
      memory,
      runDir: file("run"),
      claws,
      env: (extra = {}) =>
        Cli.baseEnv({
          ANTHROPIC_API_KEY: FAKE_KEY,
          PLANCKCLAW_DIR: memory,
          PLANCKCLAW_RUN_DIR: file("run"),
          CLAWS_DIR: claws,
          PLANCKCLAW_BRAIN_RETRIES: "0",
          PLANCKCLAW_BRAIN_TIMEOUT: "5",
          ...settings,
          ...extra
        }),
      file,
      memoryFile: (name) => {
        const target = path.join(memory, name)
        return fs.existsSync(target) ? fs.readFileSync(target, "utf8") : undefined
      },
      writeMemory: (name, content) => {
        fs.mkdirSync(memory, { recursive: true, mode: 0o700 })
        fs.writeFileSync(path.join(memory, name), content)
      },
      claw: (name, body) => writeScript(path.join(claws, name), body),
      script: (name, body) => writeScript(file(name), body)
    }
  })

/** A history line exactly as the agent writes it. */
export const line = (role: "user" | "assistant", content: string) => `${JSON.stringify({ role, content })}\n`

// ---------------------------------------------------------------------------
// The Messages API stand-in

export interface RecordedRequest {
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly rawBody: string
  readonly body: MessagesBody
}

export interface MessagesBody {
  readonly system?: string
  readonly tools?: ReadonlyArray<{ readonly name: string; readonly description: string }>
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content: unknown }>
}

export type Reply =
  | { readonly _tag: "Respond"; readonly status: number; readonly headers: Record<string, string>; readonly body: string }
  /** Never answers; the socket stays open until the client gives up. */
  | { readonly _tag: "Hang" }
  /** Drops the connection without answering. */
  | { readonly _tag: "Drop" }
  /** Announces the whole body, sends `sent` bytes of it, then drops the connection. */
  | { readonly _tag: "CutShort"; readonly body: string; readonly sent: number }
  /** Answers `reply` after `millis`. */
  | { readonly _tag: "Delay"; readonly millis: number; readonly reply: Reply }

export type Handler = (request: RecordedRequest, index: number) => Reply

export const respond = (status: number, body: string | object, headers: Record<string, string> = {}): Reply => ({
  _tag: "Respond",
  status,
  headers: typeof body === "string"
    ? { "content-type": "text/plain; charset=utf-8", ...headers }
    : { "content-type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

/** A Messages API response with these content blocks. */
export const message = (content: ReadonlyArray<unknown>, stopReason: string | null = "end_turn"): Reply =>
  respond(200, {
    id: "msg_fault",
    type: "message",
    role: "assistant",
    model: "claude-test",
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 }
  })

export const text = (reply: string): Reply => message([{ type: "text", text: reply }])

export const toolUse = (calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly input: unknown }>) =>
  message([{ type: "text", text: "Let me check." }, ...calls.map((call) => ({ type: "tool_use", ...call }))], "tool_use")

export const apiError = (status: number, type: string, detail: string, headers: Record<string, string> = {}): Reply =>
  respond(status, { type: "error", error: { type, message: detail } }, headers)

export const hang: Reply = { _tag: "Hang" }
export const drop: Reply = { _tag: "Drop" }

/** The n-th request gets the n-th reply; later ones get the last. */
export const replies = (...all: ReadonlyArray<Reply>): Handler => (_, index) => all[Math.min(index, all.length - 1)]!

const COMPACTION_PREFIX = "You are a memory compaction assistant"
export const isCompaction = (request: RecordedRequest) => request.body.system?.startsWith(COMPACTION_PREFIX) === true

/** Text of the last user message that is plain text (not tool results). */
export const lastUserText = (body: MessagesBody): string => {
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const entry = body.messages[i]!
    if (entry.role === "user" && typeof entry.content === "string") return entry.content
  }
  return ""
}

/** Summary items are `- user: TEXT` lines. */
export const summaryItems = (summary: string): Array<string> =>
  summary.split("\n").filter((item) => item.startsWith("- user: ")).map((item) => item.slice("- user: ".length))

/**
 * A summary that lists every user message it was given, after the items of
 * the existing summary, duplicates kept: folding an exchange twice shows.
 */
export const listingSummary = (request: RecordedRequest): Reply => {
  const content = String(request.body.messages[0]?.content ?? "")
  const [existing = "", batch = ""] = content.split("\n\nCONVERSATION TO SUMMARIZE:\n")
  const folded = batch.split("\n").flatMap((raw) => {
    const entry = Either.getOrUndefined(Either.try(() => JSON.parse(raw) as { role?: unknown; content?: unknown }))
    return entry?.role === "user" && typeof entry.content === "string" ? [entry.content] : []
  })
  const items = [...summaryItems(existing), ...folded]
  return text(`Conversation so far:\n${items.map((item) => `- user: ${item}`).join("\n")}`)
}

/** Answers turns with `re: TEXT` and compactions with `listingSummary`. */
export const echo: Handler = (request) =>
  isCompaction(request) ? listingSummary(request) : text(`re: ${lastUserText(request.body)}`)

export interface BrainServer {
  readonly url: string
  readonly port: number
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Waits until `count` requests have arrived; all of them. */
  readonly awaitRequests: (count: number) => Effect.Effect<ReadonlyArray<RecordedRequest>, WaitTimedOut>
  /** Turn requests only (compaction requests left out). */
  readonly turns: Effect.Effect<ReadonlyArray<RecordedRequest>>
}

const parseBody = (raw: string): MessagesBody =>
  Either.getOrElse(Either.try(() => JSON.parse(raw) as MessagesBody), () => ({ messages: [] }))

/** Serves `handler` on 127.0.0.1 (`port` 0 picks a free one) for the life of the scope. */
export const brainServer = (handler: Handler, port = 0): Effect.Effect<BrainServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const recorded: Array<RecordedRequest> = []
    const arrivals: Array<Deferred.Deferred<void>> = []
    const arrival = (index: number) => {
      for (let i = arrivals.length; i <= index; i++) arrivals.push(Deferred.unsafeMake<void>(FiberId.none))
      return arrivals[index]!
    }
    const timers = new Set<NodeJS.Timeout>()
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const rawBody = Buffer.concat(chunks).toString("utf8")
        const request: RecordedRequest = {
          path: req.url ?? "",
          headers: Object.fromEntries(
            Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(", ") : value ?? ""])
          ),
          rawBody,
          body: parseBody(rawBody)
        }
        const index = recorded.length
        recorded.push(request)
        const answer = (reply: Reply): void => {
          switch (reply._tag) {
            case "Respond":
              res.writeHead(reply.status, reply.headers)
              res.end(reply.body)
              return
            case "CutShort": {
              const bytes = Buffer.from(reply.body)
              res.writeHead(200, { "content-type": "application/json", "content-length": String(bytes.length) })
              res.write(bytes.subarray(0, reply.sent), () => req.socket.destroy())
              return
            }
            case "Delay": {
              const timer = setTimeout(() => {
                timers.delete(timer)
                answer(reply.reply)
              }, reply.millis)
              timers.add(timer)
              return
            }
            case "Drop":
              req.socket.destroy()
              return
            case "Hang":
              return
          }
        }
        answer(handler(request, index))
        Deferred.unsafeDone(arrival(index), Exit.void)
      })
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.once("error", (cause) => resume(Effect.die(cause)))
        server.listen(port, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          for (const timer of timers) clearTimeout(timer)
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const bound = (server.address() as AddressInfo).port
    return {
      url: `http://127.0.0.1:${bound}`,
      port: bound,
      requests: Effect.sync(() => [...recorded]),
      awaitRequests: (count) =>
        Deferred.await(arrival(Math.max(0, count - 1))).pipe(
          Effect.andThen(Effect.sync(() => [...recorded])),
          within(`${count} request(s) to the brain`)
        ),
      turns: Effect.sync(() => recorded.filter((request) => !isCompaction(request)))
    }
  })

/** A loopback port on which nothing listens (bound, then released): connection refused. */
export const unusedPort: Effect.Effect<number> = Effect.async((resume) => {
  const probe = Http.createServer()
  probe.listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as AddressInfo
    probe.close(() => resume(Effect.succeed(port)))
  })
})

// ---------------------------------------------------------------------------
// The built command

export interface Planckclaw {
  readonly pid: number
  readonly stdout: () => string
  readonly stderr: () => string
  /** Whole stdout lines so far. */
  readonly lines: () => Array<string>
  /** Waits for `count` whole stdout lines. */
  readonly awaitLines: (count: number) => Effect.Effect<Array<string>, WaitTimedOut>
  /** Waits until stderr matches. */
  readonly awaitStderr: (pattern: RegExp) => Effect.Effect<string, WaitTimedOut>
  readonly write: (text: string) => Effect.Effect<void>
  readonly closeInput: Effect.Effect<void>
  readonly signal: (signal: NodeJS.Signals) => Effect.Effect<void>
  /** How it ended (code or signal), waiting at most the bound. */
  readonly ended: Effect.Effect<{ readonly code: number | null; readonly signal: string | null }, WaitTimedOut>
}

/**
 * Starts `planckclaw ARGS` in the sandbox. On scope close a command still
 * running gets SIGTERM, then SIGKILL if it does not stop in time.
 */
export const planckclaw = (
  box: Sandbox,
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv,
  options: { readonly stdin?: "pipe" | "ignore"; readonly umask?: string } = {}
): Effect.Effect<Planckclaw, never, Scope.Scope> =>
  Effect.gen(function*() {
    const stdio: child.StdioOptions = [options.stdin ?? "pipe", "pipe", "pipe"]
    // With a umask, through `sh -c 'umask …; exec node …'`: the pid is still planckclaw's.
    const proc = options.umask === undefined
      ? child.spawn(process.execPath, [Cli.BIN, ...args], { cwd: box.dir, env, stdio })
      : child.spawn("/bin/sh", ["-c", `umask ${options.umask}; exec "$0" "$@"`, process.execPath, Cli.BIN, ...args], {
        cwd: box.dir,
        env,
        stdio
      })
    let stdout = ""
    let stderr = ""
    const wakers = new Set<() => void>()
    const wake = () => {
      for (const waker of [...wakers]) waker()
    }
    proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      wake()
    })
    proc.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
      wake()
    })
    // Ended means exited and its output read; but a survivor that inherited
    // its stdout (a bridge left behind) would hold the pipes open forever:
    // then ended is two seconds after the exit, and `strays` names the survivor.
    const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      proc.on("close", (code, signal) => {
        wake()
        resolve({ code, signal })
      })
      proc.on("exit", (code, signal) => {
        setTimeout(() => resolve({ code, signal }), 2000).unref()
      })
    })
    const awaitCondition = <A>(what: string, check: () => A | undefined) =>
      Effect.async<A>((resume) => {
        const waker = () => {
          const value = check()
          if (value !== undefined) {
            wakers.delete(waker)
            resume(Effect.succeed(value))
          }
        }
        wakers.add(waker)
        waker()
        return Effect.sync(() => void wakers.delete(waker))
      }).pipe(within(what))
    const running = () => proc.exitCode === null && proc.signalCode === null
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (!running()) return
        proc.kill("SIGTERM")
        const stopped = yield* Effect.promise(() => exit).pipe(within("a graceful stop", "15 seconds"), Effect.option)
        if (stopped._tag === "None") {
          proc.kill("SIGKILL")
          yield* Effect.promise(() => exit)
        }
      })
    )
    const lines = () => stdout.split("\n").slice(0, -1)
    return {
      pid: proc.pid ?? -1,
      stdout: () => stdout,
      stderr: () => stderr,
      lines,
      awaitLines: (count) =>
        awaitCondition(`${count} line(s) on planckclaw's stdout (so far: ${JSON.stringify(stdout.slice(-300))})`, () =>
          lines().length >= count ? lines() : undefined),
      awaitStderr: (pattern) =>
        awaitCondition(`stderr to match ${pattern}`, () => (pattern.test(stderr) ? stderr : undefined)),
      write: (input) => Effect.async<void>((resume) => void proc.stdin!.write(input, () => resume(Effect.void))),
      closeInput: Effect.sync(() => void proc.stdin!.end()),
      signal: (signal) => Effect.sync(() => void proc.kill(signal)),
      ended: Effect.promise(() => exit).pipe(within(`planckclaw ${args.join(" ")} to exit`))
    }
  })

/** Runs `planckclaw ARGS` with `input` on stdin to its end: code, stdout, stderr. */
export const planckclawToEnd = (box: Sandbox, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, input = "") =>
  Effect.scoped(Effect.gen(function*() {
    const proc = yield* planckclaw(box, args, env)
    yield* proc.write(input)
    yield* proc.closeInput
    const { code, signal } = yield* proc.ended
    return { code, signal, stdout: proc.stdout(), stderr: proc.stderr() }
  }))

// ---------------------------------------------------------------------------
// The interact FIFOs, as an external bridge sees them

/** Opens interact_in for writing without blocking; fails with ENXIO while no agent reads it. */
const openForWriting = (file: string): number => fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)

/**
 * Waits until an agent reads the interact_in now in `runDir` (a FIFO left by
 * a killed run, or one not opened yet, does not count).
 */
export const listening = (runDir: string) =>
  eventually(`an agent reading ${runDir}/interact_in`, () => {
    fs.closeSync(openForWriting(path.join(runDir, "interact_in")))
    return true
  })

/** Writes raw bytes to interact_in in one open/write/close, like `printf … > interact_in`. */
export const sendRaw = (runDir: string, bytes: string | Uint8Array) =>
  Effect.gen(function*() {
    const fd = yield* eventually("interact_in to accept a writer", () => openForWriting(path.join(runDir, "interact_in")))
    yield* Effect.async<void>((resume) => {
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
        Either.match(Either.flatMap(frame, decodeInteractLine), {
          onLeft: (error) => Effect.die(new Error(`unreadable line on interact_out: ${error.message}`)),
          onRight: (reply) => Queue.offer(inbox, reply)
        })),
      Effect.ignore,
      Effect.forkScoped
    )
    return {
      send: (text, channel = "cli") =>
        sendRaw(runDir, Either.getOrThrow(encodeInteractLine({ channel, text }))),
      sendRaw: (bytes) => sendRaw(runDir, bytes),
      reply: Queue.take(inbox).pipe(within("a reply on interact_out")),
      pending: Queue.takeAll(inbox).pipe(Effect.map((chunk) => [...chunk]))
    }
  })

/** Names of the six FIFOs still present in `runDir`. */
export const fifosLeft = (runDir: string): Array<string> =>
  ["interact_in", "interact_out", "brain_in", "brain_out", "claw_in", "claw_out"].filter((name) =>
    fs.existsSync(path.join(runDir, name))
  )

/** Parses every line of a JSONL text; the lines that do not parse. */
export const unparsableLines = (text: string): Array<string> =>
  text.split("\n").filter((raw) => raw !== "" && Either.isLeft(Either.try(() => JSON.parse(raw) as unknown)))

/** A small seeded PRNG (mulberry32), so a failing campaign can be replayed from its seed. */
export const prng = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// ---------------------------------------------------------------------------
// One piped session

export interface Session {
  readonly box: Sandbox
  readonly result: { readonly code: number | null; readonly stdout: string; readonly stderr: string }
  /** Stdout lines: the replies, in order. */
  readonly replies: Array<string>
  readonly requests: ReadonlyArray<RecordedRequest>
}

/**
 * Runs `planckclaw run` (terminal bridge) with `inputs` piped in, one per
 * line, against `handler`, after `prepare` set up the sandbox; then checks
 * that it ended cleanly: status 0, no process left, no runtime directory.
 */
export const session = (
  handler: Handler,
  settings: Record<string, string>,
  inputs: ReadonlyArray<string>,
  prepare: (box: Sandbox) => void = () => undefined
): Effect.Effect<Session, WaitTimedOut, Scope.Scope> =>
  Effect.gen(function*() {
    const box = yield* sandbox()
    prepare(box)
    const server = yield* brainServer(handler)
    const result = yield* planckclawToEnd(
      box,
      ["run"],
      box.env({ ANTHROPIC_BASE_URL: server.url, ...settings }),
      inputs.map((input) => `${input}\n`).join("")
    )
    expect(result.code, result.stderr).toBe(0)
    expect(yield* strays(box)).toEqual([])
    expect(fs.existsSync(box.runDir)).toBe(false)
    return { box, result, replies: result.stdout.split("\n").slice(0, -1), requests: yield* server.requests }
  })

/** History lines for these exchanges, in order. */
export const answered = (...pairs: ReadonlyArray<readonly [string, string]>) =>
  pairs.map(([user, assistant]) => line("user", user) + line("assistant", assistant)).join("")

/** How many times `needle` occurs in `haystack`. */
export const occurrences = (haystack: string, needle: string) => haystack.split(needle).length - 1

// ---------------------------------------------------------------------------
// An agent on the FIFOs

export interface FifoAgent {
  readonly box: Sandbox
  readonly server: BrainServer
  readonly proc: Planckclaw
  readonly client: InteractClient
  /** SIGTERM, then checks a clean end: status 0, no FIFO, no runtime directory, no process left. */
  readonly stop: Effect.Effect<void, WaitTimedOut>
}

/** A wait that ran out says what planckclaw logged meanwhile. */
export const diagnosed = (proc: Planckclaw) => <A, R>(effect: Effect.Effect<A, WaitTimedOut, R>) =>
  Effect.mapError(effect, (error) =>
    new WaitTimedOut({ message: `${error.message}\n--- planckclaw stderr (tail) ---\n${proc.stderr().slice(-4000)}` }))

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

/** `planckclaw run --bridge none` against `handler`, with a client on its interact FIFOs. */
export const fifoAgent = (
  handler: Handler,
  settings: Record<string, string> = {},
  prepare: (box: Sandbox) => void = () => undefined
): Effect.Effect<FifoAgent, WaitTimedOut, Scope.Scope> =>
  Effect.gen(function*() {
    const box = yield* sandbox()
    prepare(box)
    const server = yield* brainServer(handler)
    const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.env({ ANTHROPIC_BASE_URL: server.url, ...settings }), {
      stdin: "ignore"
    })
    const client = yield* connectTo(proc, box.runDir)
    const stop = Effect.gen(function*() {
      yield* proc.signal("SIGTERM")
      const end = yield* proc.ended
      expect(end, proc.stderr()).toEqual({ code: 0, signal: null })
      expect(fifosLeft(box.runDir)).toEqual([])
      expect(fs.existsSync(box.runDir)).toBe(false)
      expect(yield* strays(box)).toEqual([])
    })
    return { box, server, proc, client, stop }
  })

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
