/**
 * How an MCP server is reached (McpConnection supervises it): a client of
 * effect/ai's McpClient over its stdio transport (the process started
 * through effect's ChildProcessSpawner, noted as it runs: its pid, its
 * exit, the end of its stderr) or its HTTP transport (posted through
 * HttpClient), at protocol revision 2025-11-25.
 */
import * as McpClient from "effect/ai/McpClient"
import type { McpClientError } from "effect/ai/McpClientError"
import * as McpProtocol from "effect/ai/McpProtocol"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HttpClient from "effect/http/HttpClient"
import * as ChildProcess from "effect/process/ChildProcess"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as PlatformError from "effect/PlatformError"
import * as Result from "effect/Result"
import { describeError } from "../../runtime/Errors.js"
import { printable } from "../../runtime/Printable.js"
import type { ServerEntry } from "./McpConfig.js"
import { serverEnvironment } from "./McpEnvironment.js"
import { hidingSecrets } from "./McpNames.js"
import * as McpStdoutLines from "./McpStdoutLines.js"

/** The last bytes a server wrote to stderr, said when it fails. */
const stderrTailMax = 1024

/**
 * The most one MCP message may hold, either way (effect/ai's default, given
 * here so that what a refusal says is the limit applied).
 */
export const messageMaxBytes = 16 * 1024 * 1024

/** How long a kill of a hung server's process is waited for, before it is started again all the same. */
const killWait = Duration.seconds(5)

/** What is known of a stdio server's process in its current life; McpConnection resets it at each start. */
export interface ProcessNotes {
  pid: number | undefined
  stderrTail: string
  /** Kills its process group (SIGKILL) and waits for it, while it runs. */
  kill: Effect.Effect<void> | undefined
}

/**
 * Why the server's process failed (its spawn: NotFound...), naming its
 * program without its arguments, which effect's spawner quotes whole and
 * which may hold a key (`--api-key KEY`): these words go to the log and to
 * the model.
 */
const describeCause = (cause: unknown, entry: ServerEntry): string => {
  if (!PlatformError.isPlatformError(cause) || !(cause.reason instanceof PlatformError.SystemError)) return describeError(cause)
  const { _tag, description, method, module } = cause.reason
  if (module !== "ChildProcess" || entry._tag !== "Stdio") return describeError(cause)
  return `${_tag}: ${module}.${method} (${entry.command})${description === undefined || description === "" ? "" : `: ${description}`}`
}

/**
 * The error's words, and its cause's (why a spawn failed: ENOENT...) when it
 * has one; a message over the limit said in words a user can act on (effect/ai
 * names its option, maxMessageBytes, which is no setting of ours).
 */
export const describeClientError = (error: McpClientError, entry: ServerEntry): string => {
  if (error.reason._tag === "LimitError" && error.reason.description.includes("maxMessageBytes")) {
    return `the server sent a message over ${messageMaxBytes / 1024 / 1024} MiB, the most one MCP message may hold: ` +
      "a tool's result or tool list that large is refused"
  }
  const cause = "cause" in error.reason ? error.reason.cause : undefined
  return cause === undefined ? error.message : `${error.message}: ${describeCause(cause, entry)}`
}

/**
 * Why a call of `tool` with `input` is not sent, if its request would be
 * over the message limit: effect/ai's stdio transport closes on it (the
 * server would be restarted for the model's input), and a server's reader
 * refuses such a line too.
 */
export const oversizedCall = (tool: string, input: Readonly<Record<string, unknown>>): string | undefined => {
  // The request as effect/ai writes it, its id at its longest.
  const request = Result.try(() =>
    JSON.stringify({ jsonrpc: "2.0", id: Number.MAX_SAFE_INTEGER, method: "tools/call", params: { name: tool, arguments: input } })
  )
  // Input that is no JSON is the transport's to refuse, as any other call's.
  if (Result.isFailure(request)) return undefined
  const bytes = Buffer.byteLength(request.success)
  if (bytes <= messageMaxBytes) return undefined
  return `its input is too large: ${bytes} bytes as an MCP request, over the ${messageMaxBytes / 1024 / 1024} MiB ` +
    `(${messageMaxBytes} bytes) one MCP message may hold; it was not sent`
}

/** A failure that says the server is gone, not that one call went wrong. */
export const isTransportFailure = (error: McpClientError): boolean =>
  error.reason._tag === "TransportError" || error.reason._tag === "ClosedError" ||
  (error.reason._tag === "HttpError" && error.reason.status === 404)

/** What a connection's clients are made with: the services they use, and where they note their process. */
export interface Reach {
  readonly entry: ServerEntry
  /** How long a request may take (the claws' timeout). */
  readonly timeout: Duration.Duration
  /** Values no server may be given, whatever variable its entry puts them in. */
  readonly withheldSecrets: ReadonlyArray<Redacted.Redacted<string>>
  readonly spawner: ChildProcessSpawner.ChildProcessSpawner["Service"]
  readonly httpClient: HttpClient.HttpClient
  readonly notes: ProcessNotes
  /** Log the first line a stdio server prints outside the protocol (the agent; doctor and `tools` do not). */
  readonly logStray: boolean
}

/** Its stdout without the lines that are no MCP message (McpStdoutLines); the first such line logged. */
const messagesOf = ({ entry, logStray }: Reach, stdout: Stream.Stream<Uint8Array, PlatformError.PlatformError>) => {
  const lines = McpStdoutLines.make(messageMaxBytes)
  const hidden = hidingSecrets(entry)
  return stdout.pipe(
    Stream.map(lines.keep),
    Stream.tap(() => {
      const stray = lines.firstDropped()
      return stray === undefined || !logStray ? Effect.void : Effect.logWarning(printable(
        `MCP server ${entry.name} printed a line that is no MCP message to its stdout (ignored, and any more; ` +
          `a server's logs belong on stderr): ${hidden(stray)}`
      ))
    }),
    Stream.filter((chunk) => chunk.length > 0)
  )
}

/** The spawner the stdio transport uses: it notes the process, keeps the end of its stderr and drops stray output. */
const noting = (reach: Reach, died: Deferred.Deferred<string>) =>
  ChildProcessSpawner.make((command) =>
    reach.spawner.spawn(command).pipe(Effect.map((handle) => {
      const notes = reach.notes
      notes.pid = handle.pid
      // Bounded: a process stuck in the kernel (state D) may outlive even SIGKILL a while.
      notes.kill = handle.kill({ killSignal: "SIGKILL" }).pipe(Effect.ignore, Effect.timeoutOption(killWait), Effect.asVoid)
      return ChildProcessSpawner.makeHandle({
        ...handle,
        stdout: messagesOf(reach, handle.stdout),
        // A signal makes exitCode fail (effect's Node spawner): either way the server is gone,
        // unless the wait was only interrupted (the scope closing).
        exitCode: handle.exitCode.pipe(Effect.onExit((exit) =>
          Exit.isSuccess(exit)
            ? Deferred.succeed(died, `exited with code ${exit.value}`)
            : Cause.hasInterruptsOnly(exit.cause)
            ? Effect.void
            : Deferred.succeed(died, "was killed by a signal")
        )),
        stderr: handle.stderr.pipe(Stream.tap((chunk) =>
          Effect.sync(() => {
            notes.stderrTail = (notes.stderrTail + Buffer.from(chunk).toString("utf8")).slice(-stderrTailMax)
          })
        ))
      })
    }))
  )

/**
 * A stdio transport fails a request only once it is closed for good. Its
 * process gone (a TransportError), `died` hears of it from the exit; but its
 * reader may have stopped at a JSON-RPC message it refuses (McpStdoutLines
 * drops the lines that claim no JSON-RPC), or at one over the message
 * limit, while the process runs on, deaf: that is said in
 * `died` here, so that the server is down and started again.
 */
const downOnFailure = (
  transport: McpClient.Transport,
  entry: ServerEntry,
  died: Deferred.Deferred<string>
): McpClient.Transport => ({
  ...transport,
  request: (message, tool) =>
    transport.request(message, tool).pipe(Effect.tapError((error) =>
      error.reason._tag === "ProtocolError" || error.reason._tag === "LimitError"
        ? Deferred.succeed(died, describeClientError(error, entry))
        : Effect.void
    ))
})

const transport = (reach: Reach, died: Deferred.Deferred<string>) =>
  reach.entry._tag === "Stdio"
    ? McpClient.stdio({
      command: ChildProcess.make(reach.entry.command, [...reach.entry.args], {
        cwd: reach.entry.cwd,
        env: serverEnvironment(reach.entry.env, reach.withheldSecrets).env,
        extendEnv: false
      }),
      protocol: McpProtocol.v2025_11_25,
      maxMessageBytes: messageMaxBytes
    }).pipe(
      Effect.map((stdio) => downOnFailure(stdio, reach.entry, died)),
      Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, noting(reach, died))
    )
    : McpClient.http({
      url: reach.entry.url,
      headers: reach.entry.headers,
      protocol: McpProtocol.v2025_11_25,
      maxMessageBytes: messageMaxBytes
    })

/**
 * A client, in the caller's scope (one life of the server); fails with why
 * not. `died` is completed with why, should its process exit (or, over
 * stdio, its transport close: downOnFailure).
 */
export const connect = (reach: Reach, died: Deferred.Deferred<string>): Effect.Effect<McpClient.McpClient, string, Scope.Scope> =>
  Effect.flatMap(transport(reach, died), (connected) =>
    McpClient.make({ name: "planckclaw", version: "0.1.0", timeout: reach.timeout }).pipe(
      Effect.provideService(McpClient.Transport, connected)
    )).pipe(
      Effect.mapError((error) => describeClientError(error, reach.entry)),
      Effect.provideService(HttpClient.HttpClient, reach.httpClient)
    )
