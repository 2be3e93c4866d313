/**
 * Helpers for the FIFO tests: temp dirs (Sandbox.tempDir), shell scripts that play the
 * original bridges, scoped child processes, and line-level access to a pipe.
 */
import { execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Deferred, Effect, Result, Exit, Queue, type Scope, Stream } from "effect"
import { type FifoReader, openReader } from "../../src/pipes/PipeEnd.js"
import { framed, makeBlockFramer, makeLineFramer } from "../../src/runtime/Framing.js"
import * as Sandbox from "./Sandbox.js"

export const tempDir: Effect.Effect<string, never, Scope.Scope> = Sandbox.tempDir("planckclaw-fifo-")

export const mkfifo = (file: string): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    execFile("mkfifo", ["-m", "600", file], (error) => resume(error === null ? Effect.void : Effect.die(error)))
  })

/** Writes an executable `/bin/sh` script. */
export const writeScript = (dir: string, name: string, body: string): Effect.Effect<string> =>
  Effect.promise(async () => {
    const file = path.join(dir, name)
    await fs.promises.writeFile(file, `#!/bin/sh\n${body}`, { mode: 0o755 })
    return file
  })

/** Runs a one-shot shell command to completion; its stdout. */
export const sh = (script: string, env: Record<string, string> = {}): Effect.Effect<string> =>
  Effect.callback<string>((resume) => {
    execFile("/bin/sh", ["-c", script], { env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      resume(error === null ? Effect.succeed(stdout) : Effect.die(new Error(`sh failed: ${stderr}`))))
  })

/** A long-running process in its own group, SIGKILLed with its group on scope close. */
export const spawnScoped = (
  command: string,
  env: Record<string, string> = {},
  args: ReadonlyArray<string> = []
): Effect.Effect<{ readonly pid: number; readonly exited: Deferred.Deferred<number | null> }, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const exited = yield* Deferred.make<number | null>()
      const child = spawn(command, args, { env: { ...process.env, ...env }, detached: true, stdio: ["ignore", "inherit", "inherit"] })
      child.once("exit", (code) => Deferred.doneUnsafe(exited, Exit.succeed(code)))
      return { pid: child.pid ?? -1, exited }
    }),
    ({ exited, pid }) =>
      Effect.sync(() => Result.try(() => process.kill(-pid, "SIGKILL"))).pipe(Effect.andThen(Deferred.await(exited)))
  )

/** Reads a pipe as lines (or blank-line blocks) into a queue, from a background fiber. */
export const framesOf = (
  reader: FifoReader,
  framing: "lines" | "blocks" = "lines"
): Effect.Effect<Queue.Dequeue<string>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<string>()
    yield* reader.chunks.pipe(
      framed(() => framing === "lines" ? makeLineFramer(1 << 24) : makeBlockFramer(1 << 24)),
      Stream.runForEach((frame) => Result.isSuccess(frame) ? Queue.offer(queue, frame.success) : Effect.die(frame.failure)),
      Effect.orDie,
      Effect.forkScoped
    )
    return queue
  })

export const linesFrom = (file: string): Effect.Effect<Queue.Dequeue<string>, never, Scope.Scope> =>
  Effect.flatMap(Effect.orDie(openReader(file)), (reader) => framesOf(reader, "lines"))

export const blocksFrom = (file: string): Effect.Effect<Queue.Dequeue<string>, never, Scope.Scope> =>
  Effect.flatMap(Effect.orDie(openReader(file)), (reader) => framesOf(reader, "blocks"))

export const takeN = <A>(queue: Queue.Dequeue<A>, n: number): Effect.Effect<ReadonlyArray<A>> =>
  Queue.takeBetween(queue, n, n)

/**
 * A brain bridge's loop as the original bridge_brain.sh reads: brain_in
 * reopened for every request and read up to its empty line; `body` (shell)
 * runs for each request with its last line in `$payload`.
 */
export const eachBrainRequest = (body: string): string => `while :; do
  payload=""
  while IFS= read -r line; do
    [ -z "$line" ] && break
    payload="$line"
  done < "$PLANCKCLAW_BRAIN_IN"
  [ -z "$payload" ] && continue
${body}done`
