/**
 * Script claws served on claw_in / claw_out (ServeClaws, as `--claw
 * scripts` runs them): a discovery request read from the pipe waits one
 * loop turn for pending change events, not two, and still sees a change
 * another process finished before the request was written. Real FIFOs,
 * real files, a real child process for the edit.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect } from "@effect/vitest"
import { it } from "../support/ProcessServices.js"
import { Effect, Queue } from "effect"
import * as Scripts from "../../src/claws/ScriptClaws.js"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { serveClaws } from "../../src/pipes/ServeClaws.js"
import { blocksFrom, tempDir } from "../support/FifoKit.js"
import { declaring, settings, writeSettled } from "./ClawKit.js"


/** A claws directory with one old claw, served on fresh FIFOs; `ask` sends a discovery request and returns the tool names. */
const served = (catchUps?: Scripts.CatchUps) =>
  Effect.gen(function*() {
    const root = yield* tempDir
    const dir = Path.join(root, "claws")
    Fs.mkdirSync(dir)
    yield* writeSettled(dir, "old.sh", declaring("before"))
    const paths = yield* makeRuntimeDir(Path.join(root, "run"))
    const claws = yield* Scripts.makeWatched(settings(dir), undefined, catchUps)
    yield* Effect.forkScoped(serveClaws(claws, paths))
    const requests = yield* openWriter(paths.clawIn)
    const answers = yield* blocksFrom(paths.clawOut)
    const ask = Effect.andThen(
      requests.write("__list_tools__\n"),
      Effect.map(Queue.take(answers), (answer) => (JSON.parse(answer) as Array<{ name: string }>).map((tool) => tool.name))
    )
    return { dir, ask }
  })

describe("Script claws served on the claw FIFOs", () => {
  it.effect("a discovery request waits the one-turn catch-up, not the two-turn one", () =>
    Effect.gen(function*() {
      const count = { list: 0, request: 0 }
      const counted = (key: keyof typeof count, wait: Effect.Effect<void>) =>
        Effect.andThen(Effect.sync(() => void count[key]++), wait)
      const { ask } = yield* served({
        list: counted("list", Scripts.makeCatchUp(2)),
        request: counted("request", Scripts.makeCatchUp(1))
      })
      expect(yield* ask).toEqual(["before"])
      expect(yield* ask).toEqual(["before"])
      expect(yield* ask).toEqual(["before"])
      // The first request starts the watch, with nothing to wait for.
      expect(count).toEqual({ list: 0, request: 2 })
    }))

  it.effect("a request written after another process's edit is answered with the edit", () =>
    Effect.gen(function*() {
      const { ask, dir } = yield* served()
      expect(yield* ask).toEqual(["before"])
      for (let i = 0; i < 20; i++) {
        // The child has exited when execFileSync returns: its write is done, its event maybe not yet read.
        execFileSync("/bin/sh", ["-c", `printf '%s' '${declaring(`after_${i}`)}' > old.sh`], { cwd: dir })
        expect(yield* ask).toEqual([`after_${i}`])
      }
    }))
})
