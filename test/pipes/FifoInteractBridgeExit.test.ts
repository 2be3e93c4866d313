/**
 * An executable interact bridge that dies in the middle of a line: the part
 * it wrote is ended at its exit (farEndExits), as the unterminated-line wait
 * would end it, so the restarted bridge's next line, maybe from another
 * channel, is never glued to it, though the restart (1 s) comes sooner than
 * that wait (2 s). Real bridge processes on a real FIFO; the TestClock moves
 * the backoff. Last, `planckclaw run --bridge ./bridge.sh` as a user starts
 * it, which hears its bridge's exits so (real time: the outcome does not
 * depend on it, as the line is ended before the restart).
 */
import { describe, expect } from "@effect/vitest"
import { it } from "../support/ProcessServices.js"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Fiber, Schedule, Stream } from "effect"
import * as ExternalBridge from "../../src/pipes/ExternalBridge.js"
import * as FifoInteract from "../../src/pipes/FifoInteract.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { mkfifo, sh, tempDir, writeScript } from "../support/FifoKit.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { captureLogs } from "../support/LogCapture.js"
import { advanceTo } from "../support/TestClockWait.js"

/**
 * The bridge: its first start waits for `go`, writes half a line for alice
 * and exits 1; the restarted one writes a whole line for bob, then waits.
 */
const halfLineThenDies = `if [ ! -e "$DIR/started" ]; then
  : > "$DIR/started"
  read -r go < "$GO"
  printf 'alice\\tmy half' > "$PLANCKCLAW_INTERACT_IN"
  exit 1
fi
printf 'bob\\tbobs words\\n' > "$PLANCKCLAW_INTERACT_IN"
exec sleep 1000
`

// As a run starts it: the restarted bridge reads the replies (alice's waited in the pipe) and exits 0;
// the second only if the first is alice's own, as a glued line gets the only reply.
const halfLineThenDiesInARun = `if [ ! -e "$DIR/started" ]; then
  : > "$DIR/started"
  printf 'alice\\tmy half' > "$PLANCKCLAW_INTERACT_IN"
  exit 1
fi
printf 'bob\\tbobs words\\n' > "$PLANCKCLAW_INTERACT_IN"
tab=$(printf '\\t')
{
  IFS= read -r one
  case $one in "alice\${tab}re: my half") IFS= read -r two ;; esac
} < "$PLANCKCLAW_INTERACT_OUT"
printf '%s\\n%s\\n' "$one" "$two" > "$DIR/replies.txt"
`

const setup = Effect.gen(function*() {
  const dir = yield* tempDir
  const paths = yield* makeRuntimeDir(path.join(dir, "run"))
  const go = path.join(dir, "go")
  yield* mkfifo(go)
  const logs = yield* captureLogs
  const bridge = yield* ExternalBridge.make({
    name: "interact",
    command: yield* writeScript(dir, "bridge.sh", halfLineThenDies),
    paths,
    extraEnv: { DIR: dir, GO: go },
    restartSchedule: Schedule.exponential("1 second")
  })
  const interact = yield* FifoInteract.make({ paths, farEndExits: bridge.exits }).pipe(Effect.provide(logs.layer))
  return { interact, logs, go: sh(`printf 'go\\n' > "$GO"`, { GO: go }) }
})

describe("FIFO interact, an executable bridge that dies in the middle of a line", () => {
  it.effect("while the agent reads: the half line is a message of its own, the restarted bridge's line another", () =>
    Effect.gen(function*() {
      const { go, interact, logs } = yield* setup
      const first = yield* Effect.forkChild(interact.messages.pipe(Stream.take(1), Stream.runCollect))
      yield* go
      // The restart, 1 s after the exit: sooner than the unterminated-line wait.
      yield* advanceTo(1_000)
      expect(yield* Fiber.join(first)).toEqual([{ channel: "alice", text: "my half" }])
      expect(yield* interact.messages.pipe(Stream.take(1), Stream.runCollect)).toEqual([{ channel: "bob", text: "bobs words" }])
      expect(logs.lines).toContainEqual(expect.stringMatching(/^WARN a line on interact_in had no newline when its bridge exited/))
    }))

  it.effect("before the agent reads: what the socket or the pipe holds is ended at the exit all the same", () =>
    Effect.gen(function*() {
      const { go, interact } = yield* setup
      yield* go
      yield* advanceTo(1_000)
      expect(yield* interact.messages.pipe(Stream.take(1), Stream.runCollect)).toEqual([{ channel: "alice", text: "my half" }])
      expect(yield* interact.messages.pipe(Stream.take(1), Stream.runCollect)).toEqual([{ channel: "bob", text: "bobs words" }])
    }))

  it.live("in a run: each half goes to its own channel, and each reply to its sender", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const dir = yield* tempDir
      const bridge = yield* writeScript(dir, "bridge.sh", halfLineThenDiesInARun)
      const result = yield* Cli.run(["run", "--bridge", bridge], { cwd: dir, env: Cli.runEnv(dir, server.url, { DIR: dir }) })
      expect(result.code).toBe(0)
      expect(fs.readFileSync(path.join(dir, "replies.txt"), "utf8")).toBe("alice\tre: my half\nbob\tre: bobs words\n")
      expect(result.stderr).toContain("a line on interact_in had no newline when its bridge exited")
    }))
})
