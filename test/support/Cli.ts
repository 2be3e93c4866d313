/**
 * Runs the built `bin/planckclaw` as a real child process, the way a user
 * does, with a clean environment and a temp working directory.
 */
import * as child from "node:child_process"
import * as path from "node:path"
import { Effect } from "effect"

export const REPO = path.resolve(import.meta.dirname, "../..")
export const BIN = path.join(REPO, "bin/planckclaw")

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The parent's environment without anything that could change the agent's settings. */
export const baseEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(ANTHROPIC_|OPENAI_|DISCORD_|PLANCKCLAW_|HISTORY_|CLAWS_DIR)/.test(key)) continue
    env[key] = value
  }
  return { ...env, ...extra }
}

/**
 * The built `run` of this checkout against an Anthropic server at `brainUrl`
 * (no retries), with the shipped claws, its memory and pipes in `dir`.
 */
export const runEnv = (dir: string, brainUrl: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv =>
  baseEnv({
    ANTHROPIC_API_KEY: "test-key-not-secret",
    ANTHROPIC_BASE_URL: brainUrl,
    PLANCKCLAW_DIR: path.join(dir, "memory"),
    CLAWS_DIR: path.join(REPO, "claws"),
    PLANCKCLAW_BRAIN_RETRIES: "0",
    PLANCKCLAW_RUN_DIR: path.join(dir, "run"),
    ...extra
  })

export interface Running {
  readonly process: child.ChildProcessWithoutNullStreams
  readonly write: (text: string) => Effect.Effect<void>
  readonly closeInput: Effect.Effect<void>
  /** Resolves once stdout holds `count` lines. */
  readonly lines: (count: number) => Effect.Effect<Array<string>>
  /** What the command has written to stderr so far. */
  readonly stderrSoFar: Effect.Effect<string>
  readonly done: Effect.Effect<CliResult>
}

export interface StartOptions {
  readonly cwd: string
  readonly env: NodeJS.ProcessEnv
  /** Another copy's bin/planckclaw; this repository's by default. */
  readonly bin?: string
  /** `ulimit -n` (soft and hard) of the command, set by a shell that then execs it. */
  readonly openFileLimit?: number
}

const spawn = (args: ReadonlyArray<string>, options: StartOptions) => {
  const command = [process.execPath, options.bin ?? BIN, ...args]
  const spawnOptions = { cwd: options.cwd, env: options.env }
  return options.openFileLimit === undefined
    ? child.spawn(command[0]!, command.slice(1), spawnOptions)
    : child.spawn("/bin/sh", ["-c", `ulimit -n ${options.openFileLimit} && exec "$@"`, "sh", ...command], spawnOptions)
}

/** Starts the command; it is killed when the scope closes if still running. */
export const start = (args: ReadonlyArray<string>, options: StartOptions) =>
  Effect.gen(function*() {
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(args, options)),
      (proc) => Effect.sync(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"))
    )
    let stdout = ""
    let stderr = ""
    const waiters: Array<() => void> = []
    proc.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      for (const wake of waiters.splice(0)) wake()
    })
    proc.stderr.setEncoding("utf8").on("data", (chunk: string) => void (stderr += chunk))
    const exited = new Promise<CliResult>((resolve) => {
      proc.on("close", (code) => resolve({ code, stdout, stderr }))
    })
    const complete = () => stdout.split("\n").slice(0, -1)
    const running: Running = {
      process: proc,
      write: (text) => Effect.callback<void>((resume) => void proc.stdin.write(text, () => resume(Effect.void))),
      closeInput: Effect.sync(() => void proc.stdin.end()),
      lines: (count) =>
        Effect.callback<Array<string>>((resume) => {
          const check = () => {
            if (complete().length >= count) resume(Effect.succeed(complete()))
            else waiters.push(check)
          }
          check()
        }),
      stderrSoFar: Effect.sync(() => stderr),
      done: Effect.promise(() => exited)
    }
    return running
  })

/** Runs the command to completion with `input` on stdin. */
export const run = (args: ReadonlyArray<string>, options: StartOptions & { readonly input?: string }) =>
  Effect.scoped(
    Effect.gen(function*() {
      const running = yield* start(args, options)
      if (options.input !== undefined) yield* running.write(options.input)
      yield* running.closeInput
      return yield* running.done
    })
  )
