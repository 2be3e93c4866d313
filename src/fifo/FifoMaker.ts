/**
 * The `mkfifo` child that makes a run's six pipes (Node has no mkfifo call).
 * Spawning it when the pipes are due cost a start 10–20 ms: the main thread
 * waits while a grown process forks and the child execs. So a run starts the
 * child at once (`prepare`, from RunMain.ts): a `sh` that waits for the six
 * paths on its stdin and only then execs `mkfifo -m 600 -- PATHS`; when the
 * runtime directory has passed its checks, `mkfifo` writes the paths to it.
 * Until then it creates nothing, and a run that stops before (a bad setting,
 * a refused directory) closes its stdin or exits, and it exits without a
 * trace. It gets only PATH and the locale variables, no secret (it starts
 * before the secrets leave the environment, see Secrets.withdraw). Without a
 * prepared child, or with one that is gone, `mkfifo` spawns one as before.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as Effect from "effect/Effect"
import { describeError } from "../Errors.js"
import { RuntimeDirError } from "./RuntimeDirError.js"

/** Reads six lines (the paths), then becomes mkfifo; end of input before that: exit 1, nothing made. */
const waitingScript =
  "IFS= read -r a && IFS= read -r b && IFS= read -r c && IFS= read -r d && IFS= read -r e && IFS= read -r f && " +
  'exec mkfifo -m 600 -- "$a" "$b" "$c" "$d" "$e" "$f"'

/** How many paths the prepared child waits for. */
export const preparedCount = 6

interface Prepared {
  readonly child: ChildProcess
  readonly stderr: Array<string>
  /** Set once the child exited or failed to start: it can no longer be used. */
  gone: boolean
}

let prepared: Prepared | undefined

/** What the prepared child is given of the environment: where mkfifo is, and the language of its messages. */
const childEnvironment = (environment: NodeJS.ProcessEnv): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.entries(environment).filter(([name]) => name === "PATH" || name === "LANG" || name.startsWith("LC_"))
  )

/**
 * Starts the waiting child, once. Nothing about it can stop a start: if it
 * cannot be spawned, `mkfifo` spawns mkfifo itself. It keeps the process
 * alive for nothing, and ends with the process (its stdin closes).
 */
export const prepare = (): void => {
  if (prepared !== undefined) return
  try {
    const child = spawn("sh", ["-c", waitingScript], {
      stdio: ["pipe", "ignore", "pipe"],
      env: childEnvironment(process.env)
    })
    const state: Prepared = { child, stderr: [], gone: false }
    child.once("error", () => void (state.gone = true))
    child.once("exit", () => void (state.gone = true))
    // A child gone before its paths were written: the write fails (EPIPE), and the exit tells why.
    child.stdin?.on("error", () => undefined)
    child.stderr?.setEncoding("utf8")
    child.stderr?.on("data", (chunk: string) => void state.stderr.push(chunk))
    child.unref()
    ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
    ;(child.stderr as unknown as { unref?: () => void } | null)?.unref?.()
    prepared = state
  } catch {
    prepared = undefined
  }
}

/**
 * Ends a prepared child that was not used: at the end of its input it exits,
 * having made nothing. Completes once it is gone. (A run that stops early
 * need not call it: the child's input ends with the process.)
 */
export const discardPrepared: Effect.Effect<void> = Effect.suspend(() => {
  const state = prepared
  prepared = undefined
  if (state === undefined) return Effect.void
  return Effect.async<void>((resume) => {
    if (state.child.exitCode !== null || state.child.signalCode !== null) return resume(Effect.void)
    state.child.once("close", () => resume(Effect.void))
    state.child.stdin?.end()
  })
})

/** The pid of the prepared, still unused child (tests look at what it was given). */
export const preparedPid = (): number | undefined => prepared?.gone === false ? prepared.child.pid : undefined

const failure = (detail: string, cause?: unknown) =>
  new RuntimeDirError({ reason: "io", message: `mkfifo failed: ${detail}`, cause })

const usable = (paths: ReadonlyArray<string>): boolean =>
  paths.length === preparedCount && paths.every((file) => !file.includes("\n"))

/** The prepared child makes the FIFOs at `paths`. */
const throughPrepared = (state: Prepared, paths: ReadonlyArray<string>): Effect.Effect<void, RuntimeDirError> =>
  Effect.async<void, RuntimeDirError>((resume) => {
    const { child } = state
    child.ref()
    // "close": after the exit and the end of stderr, so its whole message is there.
    child.once("close", (code, signal) =>
      resume(
        code === 0 ? Effect.void : Effect.fail(failure(state.stderr.join("").trim() || `exit ${code ?? signal}`))
      ))
    child.stdin!.end(paths.map((file) => `${file}\n`).join(""))
    return Effect.sync(() => child.kill())
  })

/** mkfifo spawned now. */
const spawned = (paths: ReadonlyArray<string>): Effect.Effect<void, RuntimeDirError> =>
  Effect.async<void, RuntimeDirError>((resume) => {
    const child = execFile("mkfifo", ["-m", "600", "--", ...paths], (error, _stdout, stderr) =>
      resume(error === null ? Effect.void : Effect.fail(failure(stderr.trim() || describeError(error), error))))
    return Effect.sync(() => child.kill())
  })

/**
 * Makes FIFOs (0600) at `paths`, all absent: through the prepared child when
 * there is one still waiting (it is used once), else through mkfifo spawned
 * now. A failure names mkfifo's own message.
 */
export const mkfifo = (paths: ReadonlyArray<string>): Effect.Effect<void, RuntimeDirError> =>
  Effect.suspend(() => {
    const state = prepared
    if (state === undefined || state.gone || !usable(paths)) return spawned(paths)
    prepared = undefined
    return throughPrepared(state, paths)
  })
