/**
 * The private working directory's removal as a user who is not root would
 * see it (root writes into any directory, so a read-only one never stops
 * it): the real spawn helper, run as `nobody` when this test runs as root.
 */
import * as childProcess from "node:child_process"
import * as Fs from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Sandbox from "../../support/Sandbox.js"

const helperScript = fileURLToPath(new URL("../../../dist/cli/spawn-helper.cjs", import.meta.url))

const asNobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

/** Whether nobody can run `node` (it may live under a home that only root may enter, as /root/.cache). */
const nobodyRuns = (node: string): boolean => childProcess.spawnSync(asNobody[0]!, [...asNobody.slice(1), node, "-e", "0"]).status === 0

/**
 * The helper's command line, unprivileged: as this user, or as nobody when
 * this is root. As nobody, the helper's script (a bundle) is run from a
 * copy in `parent`, and node too when nobody cannot reach this one, so that
 * where the checkout and node live does not matter.
 */
const unprivileged = (parent: string): ReadonlyArray<string> => {
  if (process.getuid?.() !== 0) return [process.execPath, helperScript]
  const script = `${parent}/.spawn-helper.cjs`
  Fs.copyFileSync(helperScript, script)
  let node = process.execPath
  if (!nobodyRuns(node)) {
    node = `${parent}/.node`
    Fs.copyFileSync(process.execPath, node)
    Fs.chmodSync(node, 0o755)
  }
  return [...asNobody, node, script]
}

/** A parent the unprivileged helper may write in, removed (as root may) at the end. */
const sharedParent = Effect.acquireRelease(
  Effect.sync(() => {
    const parent = Fs.mkdtempSync("/tmp/planckclaw-private-")
    Fs.chmodSync(parent, 0o777)
    return parent
  }),
  (parent) =>
    Effect.sync(() => {
      childProcess.spawnSync("chmod", ["-R", "u+rwx", parent])
      Fs.rmSync(parent, { recursive: true, force: true })
    })
)

/** Runs `script` through the helper in a private directory of `parent`; its answer line, parsed. */
const runInUnprivilegedHelper = (parent: string, script: string) =>
  Effect.callback<Record<string, unknown>>((resume) => {
    const [command, ...args] = unprivileged(parent)
    const helper = childProcess.spawn(command!, args, { stdio: ["pipe", "pipe", "inherit"], env: { PATH: "/usr/bin:/bin" } })
    let out = ""
    helper.stdout.setEncoding("utf8")
    helper.stdout.on("data", (chunk: string) => {
      out += chunk
      if (!out.includes("\n")) return
      helper.stdin.end()
      resume(Effect.succeed(JSON.parse(out.slice(0, out.indexOf("\n"))) as Record<string, unknown>))
    })
    helper.stdin.write(`${
      JSON.stringify({
        _tag: "Run",
        id: 0,
        command: "/bin/sh",
        args: ["-c", script],
        cwd: { privateIn: parent, prefix: "claw-" },
        env: { PATH: "/usr/bin:/bin" },
        stdoutMax: 1024,
        stderrMax: 1024,
        floodAllowance: 4096
      })
    }\n`)
    return Effect.sync(() => helper.kill("SIGKILL"))
  })

describe("private working directory", () => {
  it.live("is removed though the run left directories in it that their owner may not write (a tarball's, chmod -w)", () =>
    Effect.gen(function*() {
      const parent = yield* sharedParent
      const answer = yield* Sandbox.within("the helper's answer")(
        runInUnprivilegedHelper(parent, "mkdir -p ro/sub && touch ro/sub/file ro/file && chmod 555 ro/sub ro && echo made")
      )
      expect(answer["_tag"]).toBe("Done")
      expect(Buffer.from(String(answer["stdout"]), "base64").toString()).toBe("made\n")
      expect(answer["warnings"]).toBeUndefined()
      // Only the copies made to run the helper as nobody are left.
      expect(Fs.readdirSync(parent).filter((name) => !name.startsWith("."))).toEqual([])
    }))
})
