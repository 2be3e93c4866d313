/**
 * What the claw tests share: claws written as settled files (last modified
 * long ago, as claws normally are: trusted by their identity) and the
 * script claws' settings for a directory.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Duration, Effect } from "effect"
import type * as Scripts from "../../src/claws/ScriptClaws.js"

export const old = new Date("2020-01-01T00:00:00Z")

/** Writes an executable claw `file` in `dir` with `body`, dated long ago. */
export const writeSettled = (dir: string, file: string, body: string) =>
  Effect.sync(() => {
    const path = Path.join(dir, file)
    Fs.writeFileSync(path, body, { mode: 0o755 })
    Fs.utimesSync(path, old, old)
  })

/** A claw declaring one tool named `tool`, doing nothing. */
export const declaring = (tool: string) => `#!/bin/sh\n#TOOLS:{"name":"${tool}","description":"d"}\n`

export const settings = (directory: string): Scripts.ScriptsConfig => ({
  directory,
  timeout: Duration.seconds(30),
  outputMax: 16_384,
  withheldSecrets: []
})
