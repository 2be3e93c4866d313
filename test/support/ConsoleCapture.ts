/**
 * What a brain prints and logs, captured instead of shown, for tests that
 * check what the user (or a log reader) would see: never a secret.
 */
import { Console, Effect, Logger, References, type Scope } from "effect"

/**
 * A Console that records what is written, plus a logger that records log
 * lines (the test environment removes the default one), as `stream: text`.
 */
export const captureConsole = (): Effect.Effect<Effect.Effect<ReadonlyArray<string>>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const record = (stream: string) => (...args: ReadonlyArray<unknown>) => {
      lines.push(`${stream}: ${args.map(String).join(" ")}`)
    }
    const ignore = () => {}
    const console: Console.Console = {
      assert: ignore,
      clear: ignore,
      count: ignore,
      countReset: ignore,
      debug: record("stdout"),
      dir: record("stdout"),
      dirxml: record("stdout"),
      error: record("stderr"),
      group: ignore,
      groupCollapsed: ignore,
      groupEnd: ignore,
      info: record("stdout"),
      log: record("stdout"),
      table: record("stdout"),
      time: ignore,
      timeEnd: ignore,
      timeLog: record("stdout"),
      trace: record("stderr"),
      warn: record("stderr")
    }
    const logger = Logger.make(({ logLevel, message }) => record(`log ${logLevel}`)(...[message].flat()))
    yield* Effect.updateServiceScoped(Console.Console, () => console)
    yield* Effect.updateServiceScoped(References.CurrentLoggers, (loggers) => new Set([...loggers, logger]))
    return Effect.sync(() => [...lines])
  })
