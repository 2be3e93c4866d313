/**
 * The built `planckclaw run` (or another command: `command`) with its standard input and output on a
 * pseudo-terminal (util-linux `script`): what is written is typed, what it
 * prints is read back, raw and with its escape sequences removed.
 */
import * as child from "node:child_process"
import { Effect } from "effect"
import * as Cli from "./Cli.js"
import { eventually, within } from "./Sandbox.js"

const quote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`

// eslint-disable-next-line no-control-regex
export const ESCAPES = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[\]PX^_][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[()][0-9A-Za-z]|\u001b[=>]/g

export const session = (
  options: { cwd: string; env: NodeJS.ProcessEnv; args?: ReadonlyArray<string>; command?: ReadonlyArray<string> }
) =>
  Effect.gen(function*() {
    const command = [`exec ${quote(process.execPath)} ${quote(Cli.BIN)}`, ...[...(options.command ?? ["run"]), ...(options.args ?? [])].map(quote)]
      .join(" ")
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() =>
        child.spawn("script", ["-qfec", command, "/dev/null"], { cwd: options.cwd, env: options.env, stdio: ["pipe", "pipe", "pipe"] })
      ),
      (proc) => Effect.sync(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"))
    )
    let raw = ""
    proc.stdout.on("data", (chunk: Buffer) => void (raw += chunk.toString("utf8")))
    const exited = new Promise<number | null>((resolve) => proc.on("close", (code) => resolve(code)))
    const screen = () => raw.replace(ESCAPES, "").replace(/\r/g, "")
    let seen = 0
    return {
      raw: () => raw,
      screen,
      type: (text: string) => Effect.sync(() => void proc.stdin.write(text)),
      /** Waits for `text` to appear after what the last wait found; returns the output in between. */
      until: (text: string) =>
        eventually(`${JSON.stringify(text)} on the terminal`, () => {
          const found = screen().indexOf(text, seen)
          if (found === -1) return undefined
          const between = screen().slice(seen, found + text.length)
          seen = found + text.length
          return between
        }),
      exit: within("the run to end", "20 seconds")(Effect.promise(() => exited))
    }
  })
